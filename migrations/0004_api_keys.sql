-- API keys (src/api-keys). `api_keys` is the read model of projections/api-keys.ts (rebuildable from
-- events); the other tables hold operational counters written in batches by the request pipeline,
-- which are not events and survive a rebuild of `api_keys`.
CREATE TABLE api_keys (
  id          text PRIMARY KEY,
  employer_id text NOT NULL,
  name        text NOT NULL,
  -- SHA-256 (hex) of the raw key; the raw key itself is never stored.
  key_hash    text NOT NULL UNIQUE,
  key_prefix  text NOT NULL,
  scopes      text[] NOT NULL,
  allowed_ip_cidrs text[] NOT NULL DEFAULT '{}',
  expires_at  timestamptz,
  -- NULL: the service default (API_KEY_RATE_LIMIT_PER_MIN).
  rate_limit_per_minute integer,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL,
  suspended   boolean NOT NULL DEFAULT false,
  revoked_at  timestamptz,
  revoke_reason text
);
CREATE INDEX api_keys_by_employer ON api_keys (employer_id, created_at DESC, id);
CREATE INDEX api_keys_by_creator ON api_keys (employer_id, created_by) WHERE revoked_at IS NULL;

-- Usage telemetry, flushed from each process's memory at least every 5 seconds.
CREATE TABLE api_key_usage (
  key_id        text PRIMARY KEY,
  employer_id   text NOT NULL,
  request_count bigint NOT NULL DEFAULT 0,
  last_used_at  timestamptz NOT NULL,
  last_used_ip  text NOT NULL
);

-- Fixed one-minute rate-limit windows shared by every process. `bucket` is `key:<keyId>` or
-- `invalid-ip:<address>`; processes lease permits from `used` (see src/api-keys/rate-limiter.ts).
CREATE TABLE api_key_rate_windows (
  bucket       text NOT NULL,
  window_start timestamptz NOT NULL,
  used         integer NOT NULL,
  -- Permits granted by the statement that last touched the row (read back through RETURNING).
  last_grant   integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);
CREATE INDEX api_key_rate_windows_by_start ON api_key_rate_windows (window_start);

-- API_KEY_IP_NOT_ALLOWED rejections, aggregated per key, address and minute before they are written,
-- so a flood costs one row update per flush. The hourly integration-alerts job sums `rejections`.
CREATE TABLE api_key_ip_rejections (
  employer_id  text NOT NULL,
  key_id       text NOT NULL,
  ip           text NOT NULL,
  minute       timestamptz NOT NULL,
  rejections   integer NOT NULL,
  first_at     timestamptz NOT NULL,
  last_at      timestamptz NOT NULL,
  PRIMARY KEY (employer_id, key_id, ip, minute)
);
CREATE INDEX api_key_ip_rejections_by_employer ON api_key_ip_rejections (employer_id, minute DESC);
