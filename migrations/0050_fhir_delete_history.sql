-- FHIR delete and history (read model `fhir-resources`). A deleted clinical resource keeps its row, as an
-- erased one does: resource NULL, deleted true, its version the deletion's (reads answer 410).
ALTER TABLE fhir_resources ADD COLUMN deleted boolean NOT NULL DEFAULT false;

-- One row per version of every resource, deletions included (no content: a version's content is opened
-- from the event that wrote it, as vread does). History pages by (last_updated, resource_type, id,
-- version_id), newest first. An erasure removes its patient's rows: their versions open no more.
CREATE TABLE fhir_resource_versions (
  employer_id   text NOT NULL,
  resource_type text NOT NULL,
  id            text NOT NULL,
  version_id    integer NOT NULL,
  last_updated  timestamptz NOT NULL,
  patient_id    text NOT NULL,
  deleted       boolean NOT NULL,
  PRIMARY KEY (employer_id, resource_type, id, version_id)
);
CREATE INDEX fhir_resource_versions_by_time ON fhir_resource_versions (employer_id, resource_type, last_updated DESC, id DESC, version_id DESC);
CREATE INDEX fhir_resource_versions_by_patient ON fhir_resource_versions (employer_id, patient_id);
