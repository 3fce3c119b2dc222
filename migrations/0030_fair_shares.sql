-- Fair shares of the shared worker and queue (src/worker/fair-share.ts, src/worker/admission.ts).

-- How many jobs each employer queued lately: a count that halves every 30 seconds. A job's
-- graphile-worker priority is its employer's count when it is queued (lower runs first), so the
-- jobs of an employer that queued few lately run before the backlog of one that queued many.
CREATE TABLE worker_fair_shares (
  employer_id text PRIMARY KEY,
  recent_jobs double precision NOT NULL,
  updated_at  timestamptz NOT NULL
);

-- Counts one more job of the employer and answers its priority: the jobs it queued lately before
-- this one, at most smallint's maximum (graphile-worker's priority column).
CREATE FUNCTION employer_job_priority(employer text) RETURNS smallint
LANGUAGE sql VOLATILE AS $$
  INSERT INTO worker_fair_shares AS share (employer_id, recent_jobs, updated_at) VALUES (employer, 1, clock_timestamp())
  ON CONFLICT (employer_id) DO UPDATE SET
    recent_jobs = share.recent_jobs * power(0.5, GREATEST(0, extract(epoch FROM clock_timestamp() - share.updated_at)::double precision) / 30) + 1,
    updated_at = clock_timestamp()
  RETURNING LEAST(32767, round(share.recent_jobs) - 1)::smallint
$$;

-- Admission tickets: one per unit of queued work an employer asked for that has no row of its own
-- yet (a simulation until its job ends; a queued ping or a redelivery until its delivery is
-- pending). Counted, with those rows, against the employer's limit of work in flight.
CREATE TABLE work_admissions (
  employer_id text NOT NULL,
  kind        text NOT NULL,
  work_id     text NOT NULL,
  admitted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (employer_id, kind, work_id)
);

-- Deliveries an employer asked for (a redelivery, a queued ping) still in flight count against its
-- limit of requested deliveries (src/webhooks/commands.ts).
ALTER TABLE webhook_deliveries ADD COLUMN redelivered_at timestamptz;
CREATE INDEX webhook_deliveries_requested_in_flight ON webhook_deliveries (employer_id)
  WHERE status = 'pending' AND (redelivered_at IS NOT NULL OR (event_type = 'test.ping' AND trigger = 'event'));
