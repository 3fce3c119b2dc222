-- Per-person data keys (crypto-shredding, src/crypto/personal-data.ts). Operational state outside the
-- event log, never rebuilt: each person's AES-256-GCM data key, sealed with ENCRYPTION_KEY (associated
-- data = employer and subject). Erasure sets wrapped_key to NULL: every event field sealed with that
-- key is unreadable from then on, wherever a copy of the event lives.
CREATE TABLE personal_data_keys (
  employer_id text NOT NULL,
  subject_id  text NOT NULL,
  wrapped_key text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  erased_at   timestamptz,
  PRIMARY KEY (employer_id, subject_id)
);

-- Read model `fhir-resources`: the current version of every FHIR resource, as JSONB with id and meta.
-- patient_id is the Patient a resource belongs to (a Patient's own id for a Patient). An erased
-- patient's rows keep only ids and versions (resource NULL, erased true) so reads answer 410.
CREATE TABLE fhir_resources (
  employer_id   text NOT NULL,
  resource_type text NOT NULL,
  id            text NOT NULL,
  version_id    integer NOT NULL,
  created_at    timestamptz NOT NULL,
  last_updated  timestamptz NOT NULL,
  patient_id    text,
  resource      jsonb,
  erased        boolean NOT NULL DEFAULT false,
  PRIMARY KEY (employer_id, resource_type, id)
);
-- Searches page by (last_updated, id) in either direction; the roster by (created_at, id), newest first.
CREATE INDEX fhir_resources_by_last_updated ON fhir_resources (employer_id, resource_type, last_updated, id);
CREATE INDEX fhir_resources_roster ON fhir_resources (employer_id, created_at DESC, id DESC) WHERE resource_type = 'Patient' AND NOT erased;
CREATE INDEX fhir_resources_by_patient ON fhir_resources (employer_id, patient_id);

-- One row per value of each search parameter of each resource (src/fhir/search-parameters.ts says
-- which values): strings lower-cased (prefix search), tokens as `code` and `system|code`, dates as ISO
-- text, references as `Patient/<id>`, e-mails as their keyed blind index (never in clear).
CREATE TABLE fhir_search_values (
  employer_id   text NOT NULL,
  resource_type text NOT NULL,
  resource_id   text NOT NULL,
  param         text NOT NULL,
  value         text NOT NULL
);
CREATE INDEX fhir_search_values_lookup ON fhir_search_values (employer_id, resource_type, param, value text_pattern_ops, resource_id);
CREATE INDEX fhir_search_values_of_resource ON fhir_search_values (employer_id, resource_type, resource_id);

-- Read model `patients`: cohort uploads and their counts (no personal data).
CREATE TABLE cohorts (
  employer_id text NOT NULL,
  cohort_id   text NOT NULL,
  received    integer NOT NULL,
  created     integer NOT NULL,
  updated     integer NOT NULL,
  unchanged   integer NOT NULL,
  uploaded_at timestamptz NOT NULL,
  PRIMARY KEY (employer_id, cohort_id)
);
CREATE INDEX cohorts_by_time ON cohorts (employer_id, uploaded_at DESC, cohort_id DESC);
