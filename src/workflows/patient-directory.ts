// The workflows' port to the patients of an employer: a request about a patient of another employer
// (or none) is refused, and a simulation counts the members it projects costs for.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

export type PatientDirectory = {
  /** The patient exists, belongs to this employer and is not erased. */
  exists(employerId: string, patientId: string): Promise<boolean>;
  /** The employer's active patients, or those of one of its cohorts. */
  countActive(employerId: string, cohortId?: string | null): Promise<number>;
};

/**
 * TEMPORARY, until the patients read model (issue 11) is merged: reads `workflow_patient_directory`
 * (migration 0024), which nothing in the service writes and tests fill. At merge, replace it with an
 * implementation over the patients read model and drop the table.
 */
export function temporaryPatientDirectory(pool: CommonQueryMethods): PatientDirectory {
  return {
    async exists(employerId, patientId) {
      return pool.exists(sql.unsafe`
        SELECT 1 FROM workflow_patient_directory WHERE employer_id = ${employerId} AND patient_id = ${patientId} AND active`);
    },
    async countActive(employerId, cohortId) {
      return pool.oneFirst(sql.type(z.object({ count: z.number() }))`
        SELECT count(*)::int AS count FROM workflow_patient_directory
        WHERE employer_id = ${employerId} AND active ${cohortId ? sql.fragment`AND cohort_id = ${cohortId}` : sql.fragment``}`);
    },
  };
}
