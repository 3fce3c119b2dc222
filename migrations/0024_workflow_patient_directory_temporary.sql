-- TEMPORARY (until the patients read model of issue 11 is merged): the rows the workflows'
-- PatientDirectory port reads (src/workflows/patient-directory.ts, `temporaryPatientDirectory`) to
-- check that a patient belongs to an employer and to count an employer's (or a cohort's) active
-- patients. Nothing in the service writes it; tests insert rows. At merge the coordinator points the
-- port at the patients read model and drops this table in a later migration.
CREATE TABLE workflow_patient_directory (
  employer_id text NOT NULL,
  patient_id  text NOT NULL,
  cohort_id   text,
  active      boolean NOT NULL DEFAULT true,
  PRIMARY KEY (employer_id, patient_id)
);
CREATE INDEX workflow_patient_directory_by_cohort ON workflow_patient_directory (employer_id, cohort_id);
