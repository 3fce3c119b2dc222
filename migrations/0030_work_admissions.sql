-- Limits of the queued work an employer may have in flight (src/worker/admission.ts).

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
