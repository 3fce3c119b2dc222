-- SMART Backend Services clients (src/smart-clients). `smart_clients` is the read model of
-- projections/smart-clients (rebuildable from events). The two other tables are operational, written by
-- the token endpoint and never rebuilt: the assertions' jti values (each accepted once within its
-- lifetime, by every process: the primary key decides) and the access tokens issued (only their SHA-256).
CREATE TABLE smart_clients (
  client_id     text PRIMARY KEY,
  employer_id   text NOT NULL,
  name          text NOT NULL,
  -- Exactly one of jwks (a JWK Set of public keys) and jwks_url is set.
  jwks          jsonb,
  jwks_url      text,
  scopes        text[] NOT NULL,
  registered_by text NOT NULL,
  registered_at timestamptz NOT NULL,
  keys_updated_at timestamptz NOT NULL,
  revoked_at    timestamptz
);
CREATE INDEX smart_clients_by_employer ON smart_clients (employer_id, registered_at DESC, client_id);

CREATE TABLE smart_assertion_jtis (
  client_id  text NOT NULL,
  jti        text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (client_id, jti)
);
CREATE INDEX smart_assertion_jtis_by_expiry ON smart_assertion_jtis (client_id, expires_at);

CREATE TABLE smart_access_tokens (
  token_hash  text PRIMARY KEY,
  employer_id text NOT NULL,
  client_id   text NOT NULL,
  scopes      text[] NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX smart_access_tokens_by_client ON smart_access_tokens (client_id, expires_at);
