-- Audit log streams (src/audit-streams/). `audit_streams` is the read model of projections/audit-streams
-- (rebuildable from events). `audit_stream_cursors` is operational, written by the delivery worker:
-- how far each stream has delivered, counted in its employer's audit chain sequence (audit_chain.seq,
-- commit order, never rebuilt), so the cursor survives restarts and rebuilds of audit_log alike.
CREATE TABLE audit_streams (
  id            text PRIMARY KEY,
  employer_id   text NOT NULL,
  name          text NOT NULL,
  preset        text NOT NULL CHECK (preset IN ('ndjson', 'splunk_hec', 'datadog')),
  url           text NOT NULL,
  status        text NOT NULL CHECK (status IN ('active', 'paused')),
  -- AES-256-GCM under ENCRYPTION_KEY, associated data = id (src/crypto/secret-box.ts): the generic
  -- preset's signing secret, Splunk's HEC token or Datadog's API key.
  sealed_secret text NOT NULL,
  -- earliest: the whole audit log; latest: from the entry of the creation event (created_event_id) on.
  start         text NOT NULL CHECK (start IN ('earliest', 'latest')),
  created_event_id uuid NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);
CREATE INDEX audit_streams_by_employer ON audit_streams (employer_id, created_at, id);

CREATE TABLE audit_stream_cursors (
  stream_id     text PRIMARY KEY,
  employer_id   text NOT NULL,
  -- Every entry with a chain seq at or below this one was acknowledged (2xx) by the destination.
  delivered_seq bigint NOT NULL,
  -- The batch being sent: entries in (delivered_seq, pending_through_seq]. Set before the request, so
  -- a retry (or the next worker after a crash) resends exactly that batch, same id and entries.
  pending_through_seq bigint,
  delivered_entries bigint NOT NULL DEFAULT 0,
  last_delivered_at timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0,
  last_failure_at timestamptz,
  last_status_code integer,
  last_error    text,
  next_attempt_at timestamptz,
  -- The run in progress: its id, since when, its worker process's lease and graphile-worker id
  -- (src/worker/lease.ts). Another run takes over only once the lease is gone or the claim is stale.
  run_id        uuid,
  claimed_at    timestamptz,
  lease         integer,
  worker        text
);
CREATE INDEX audit_stream_cursors_leased ON audit_stream_cursors (lease) WHERE lease IS NOT NULL;

-- A stream reads its entries by chain seq, joining audit_log by event id.
CREATE INDEX audit_log_by_event ON audit_log (event_id);
