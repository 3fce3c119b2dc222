// The workflows' port to the patients of an employer: a request about a patient of another employer
// (or none) is refused, and a simulation counts the members it projects costs for.
// Implemented over the patients read models by readModelPatientDirectory (projections/patients/queries.ts).
export type PatientDirectory = {
  /** The patient exists, belongs to this employer and is not erased. */
  exists(employerId: string, patientId: string): Promise<boolean>;
  /** The employer's active patients, or those of one of its cohorts. */
  countActive(employerId: string, cohortId?: string | null): Promise<number>;
};
