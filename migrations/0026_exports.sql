-- Exports (src/exports/): operational state, not a read model (never rebuilt from events). One row
-- per asynchronous export (CSV or FHIR Bulk Data) and its files as chunks of text in Postgres, so
-- every node can serve a download (no shared disk). `resume_after` is the keyset position the worker
-- has written up to: a chunk and the new position commit together, so a worker killed mid-export
-- resumes with no missing and no duplicate row.
CREATE TABLE exports (
  employer_id      text NOT NULL,
  export_id        text NOT NULL,
  kind             text NOT NULL,
  status           text NOT NULL,
  progress         integer NOT NULL DEFAULT 0,
  row_count        integer NOT NULL DEFAULT 0,
  total_rows       integer,
  resume_after     jsonb,
  failure          text,
  -- FHIR Bulk Data: the kick-off's parameters and URL, and the snapshot the files are read in.
  request          jsonb,
  transaction_time timestamptz,
  -- The run in flight: its worker's lease (src/webhooks/worker-lease.ts) and graphile-worker id, so a
  -- run whose process died is found and its job unlocked (src/exports/tasks.ts).
  worker_lease     integer,
  worker_id        text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  expires_at       timestamptz,
  PRIMARY KEY (employer_id, export_id)
);
CREATE INDEX exports_expiring ON exports (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX exports_in_flight ON exports (employer_id, kind) WHERE status IN ('pending', 'running');

CREATE TABLE export_chunks (
  employer_id text NOT NULL,
  export_id   text NOT NULL,
  file_name   text NOT NULL,
  seq         integer NOT NULL,
  line_count  integer NOT NULL,
  content     text NOT NULL,
  PRIMARY KEY (employer_id, export_id, file_name, seq),
  FOREIGN KEY (employer_id, export_id) REFERENCES exports ON DELETE CASCADE
);
