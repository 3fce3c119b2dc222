-- The patients of each cohort upload (read model `patients`, projections/patients/projection.ts): a
-- patient registered or updated by an upload belongs to its cohort, and to every later cohort that
-- changes it again; an erasure removes the patient from all. Read by the platform workflows'
-- PatientDirectory (counting a cohort's patients); it replaces the temporary table of migration 0024.
CREATE TABLE cohort_members (
  employer_id text NOT NULL,
  cohort_id   text NOT NULL,
  patient_id  text NOT NULL,
  PRIMARY KEY (employer_id, cohort_id, patient_id)
);
CREATE INDEX cohort_members_by_patient ON cohort_members (employer_id, patient_id);

DROP TABLE workflow_patient_directory;
