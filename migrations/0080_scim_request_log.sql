-- One row per SCIM request (src/scim/request-log.ts), read by the employer (GET
-- /api/employer/scim-requests) and pruned after RETENTION_SCIM_REQUESTS_DAYS. No personal values: the
-- path keeps its ids, the query string and bodies are never stored, and `detail` is our own message
-- with quoted values redacted.
CREATE TABLE scim_request_log (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  employer_id text NOT NULL,
  request_id  text NOT NULL,
  received_at timestamptz NOT NULL,
  method      text NOT NULL,
  path        text NOT NULL,
  status      integer NOT NULL,
  scim_type   text,
  detail      text,
  duration_ms integer NOT NULL
);
CREATE INDEX scim_request_log_by_employer ON scim_request_log (employer_id, received_at DESC, id DESC);
CREATE INDEX scim_request_log_by_time ON scim_request_log (received_at);
