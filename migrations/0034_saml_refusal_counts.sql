-- Refused SAML callbacks counted per employer, minute and reason: operational counts, not events. Each
-- API process adds what it counted every few seconds (src/sso/saml-refusals.ts); the worker's
-- saml-refusal-summaries job turns every finished minute of an employer into one SamlLoginsRefused
-- event (its audit entry) and deletes the minute's rows. `client_addresses`: a sample, 10 at most.
CREATE TABLE saml_refusal_counts (
  employer_id      text NOT NULL,
  window_start     timestamptz NOT NULL,
  reason           text NOT NULL,
  refusals         integer NOT NULL,
  client_addresses text[] NOT NULL,
  PRIMARY KEY (employer_id, window_start, reason)
);
CREATE INDEX saml_refusal_counts_by_window ON saml_refusal_counts (window_start);
