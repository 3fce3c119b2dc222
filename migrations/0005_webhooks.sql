-- Outbound webhooks (src/webhooks). `webhook_subscriptions` is the read model of
-- projections/webhooks.ts (rebuildable from events). The delivery tables are the delivery log and
-- the delivery state machine, written by the worker: operational records, not events.
CREATE TABLE webhook_subscriptions (
  id            text PRIMARY KEY,
  employer_id   text NOT NULL,
  url           text NOT NULL,
  events        text[] NOT NULL,
  description   text,
  status        text NOT NULL,
  disabled_reason text,
  failure_count integer NOT NULL DEFAULT 0,
  max_failures  integer NOT NULL,
  -- AES-256-GCM under ENCRYPTION_KEY, associated data = id (src/crypto/secret-box.ts).
  sealed_secret text NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);
CREATE INDEX webhook_subscriptions_by_employer ON webhook_subscriptions (employer_id, created_at, id);

-- One row per delivery: an (event, subscription) pair, or a direct test ping.
CREATE TABLE webhook_deliveries (
  -- The body `id`, x-webhook-id and webhook-id: the same on every attempt.
  delivery_id   uuid PRIMARY KEY,
  employer_id   text NOT NULL,
  webhook_id    text NOT NULL,
  -- The domain event delivered; NULL for a direct test (POST .../test).
  event_id      uuid,
  event_type    text NOT NULL,
  event_timestamp timestamptz NOT NULL,
  -- json, not jsonb: keeps key order, so every attempt sends the same bytes.
  data          json NOT NULL,
  trigger       text NOT NULL CHECK (trigger IN ('event', 'test')),
  status        text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts      integer NOT NULL DEFAULT 0,
  -- `attempts` when the current series of retries began (0, or its value at a redelivery): the
  -- retry schedule counts from here.
  series_start  integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  -- An attempt in flight: the worker process's lease (src/webhooks/worker-lease.ts) and the
  -- graphile-worker worker holding the job, so a crashed process's attempt can be run again.
  attempt_lease integer,
  attempt_worker text,
  attempt_started_at timestamptz,
  last_status_code integer,
  last_error    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  completed_at  timestamptz,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC, delivery_id DESC);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (attempt_lease) WHERE attempt_lease IS NOT NULL;

-- The delivery log: one row per attempt.
CREATE TABLE webhook_delivery_attempts (
  delivery_id   uuid NOT NULL REFERENCES webhook_deliveries (delivery_id) ON DELETE CASCADE,
  attempt       integer NOT NULL,
  requested_at  timestamptz NOT NULL,
  latency_ms    integer NOT NULL,
  status_code   integer,
  error         text,
  -- At most RESPONSE_BODY_LIMIT_CHARS (4096) characters (src/webhooks/send.ts).
  response_body text NOT NULL,
  next_retry_at timestamptz,
  PRIMARY KEY (delivery_id, attempt)
);
