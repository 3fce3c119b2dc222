-- Read models of the tenants and identity projections (projections/tenants.ts, projections/identity.ts).
CREATE TABLE employers (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE users (
  id          text PRIMARY KEY,
  employer_id text NOT NULL,
  email       text NOT NULL,
  role        text NOT NULL,
  user_name   text NOT NULL,
  given_name  text,
  family_name text,
  display_name text,
  external_id text,
  active      boolean NOT NULL DEFAULT true,
  -- SCIM DELETE hides the user from SCIM (404) but keeps the record, deactivated.
  scim_deleted boolean NOT NULL DEFAULT false,
  source      text NOT NULL,
  version     bigint NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX users_by_employer ON users (employer_id, created_at, id);
CREATE UNIQUE INDEX users_by_email ON users (lower(email));
CREATE INDEX users_by_employer_user_name ON users (employer_id, lower(user_name));
CREATE INDEX users_by_employer_external_id ON users (employer_id, external_id);

CREATE TABLE signin_tokens (
  token_hash  text PRIMARY KEY,
  token_id    text NOT NULL,
  employer_id text NOT NULL,
  user_id     text NOT NULL,
  expires_at  timestamptz NOT NULL,
  redeemed_at timestamptz
);

CREATE TABLE sessions (
  session_hash text PRIMARY KEY,
  session_id  text NOT NULL UNIQUE,
  employer_id text NOT NULL,
  user_id     text NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  ended_at    timestamptz
);
CREATE INDEX sessions_by_user ON sessions (employer_id, user_id) WHERE ended_at IS NULL;

-- One row per auditable event (projections/audit.ts), in global order.
CREATE TABLE audit_log (
  global_position bigint PRIMARY KEY,
  event_id    uuid NOT NULL,
  employer_id text NOT NULL,
  action      text NOT NULL,
  actor_type  text NOT NULL,
  actor_id    text NOT NULL,
  target_type text,
  target_id   text,
  details     jsonb NOT NULL DEFAULT '{}',
  occurred_at timestamptz NOT NULL
);
CREATE INDEX audit_log_by_employer ON audit_log (employer_id, occurred_at DESC);
CREATE INDEX audit_log_by_action ON audit_log (employer_id, action, occurred_at DESC);
