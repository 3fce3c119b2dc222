// Patients of an employer for the workflow tests. TEMPORARY: until the patients capability (issue 11)
// is merged, this writes the rows the workflows' temporary PatientDirectory reads
// (workflow_patient_directory, migration 0024). At merge, replace the body with a patient created
// through the patients capability (FHIR POST /api/fhir/Patient or its command) and, for a cohort,
// a cohort upload.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import type { TestService } from './service.ts';

export async function addPatient(service: TestService, employerId: string, options: { cohortId?: string } = {}): Promise<string> {
  const patientId = `pat_${randomUUID().replaceAll('-', '')}`;
  await service.ctx.db.slonik.query(sql.unsafe`
    INSERT INTO workflow_patient_directory (employer_id, patient_id, cohort_id) VALUES (${employerId}, ${patientId}, ${options.cohortId ?? null})`);
  return patientId;
}
