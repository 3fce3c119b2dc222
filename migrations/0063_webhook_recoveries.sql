-- Recoveries after a receiver outage (POST /api/employer/webhooks/{id}/recover, src/webhooks/recovery.ts):
-- the failed deliveries since `since` become pending again, numbered in their original order, and
-- are attempted one at a time: the end of one (succeeded or failed) queues the next. Operational
-- records beside the delivery log, not events (the request itself is WebhookRecoveryRequested).
CREATE TABLE webhook_recoveries (
  recovery_id  uuid PRIMARY KEY,
  employer_id  text NOT NULL,
  webhook_id   text NOT NULL,
  since        timestamptz NOT NULL,
  requested_at timestamptz NOT NULL DEFAULT now(),
  total        integer NOT NULL
);
CREATE INDEX webhook_recoveries_by_webhook ON webhook_recoveries (webhook_id, requested_at DESC);

ALTER TABLE webhook_deliveries
  ADD COLUMN recovery_id uuid,
  ADD COLUMN recovery_position integer;
CREATE INDEX webhook_deliveries_recovery ON webhook_deliveries (recovery_id, recovery_position) WHERE recovery_id IS NOT NULL;
