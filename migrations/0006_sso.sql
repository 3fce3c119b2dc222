-- Read model of the SSO projection (projections/sso.ts): one row per employer that ever saved its SSO
-- configuration. The SCIM token is stored only as its SHA-256 hash; SCIM requests look it up by hash.
CREATE TABLE sso_configurations (
  employer_id                text PRIMARY KEY,
  saml_enabled               boolean NOT NULL DEFAULT false,
  saml_metadata_url          text,
  saml_entry_point           text,
  -- PEM certificates; several during an IdP key rollover.
  saml_certificates          jsonb NOT NULL DEFAULT '[]',
  saml_issuer                text,
  saml_name_id_format        text,
  saml_email_attribute       text,
  saml_first_name_attribute  text,
  saml_last_name_attribute   text,
  scim_enabled               boolean NOT NULL DEFAULT false,
  scim_token_id              text,
  scim_token_hash            text UNIQUE,
  scim_token_rotated_at      timestamptz,
  updated_at                 timestamptz NOT NULL
);

-- SAML protocol state, not domain state: outstanding AuthnRequest ids and the assertion replay cache.
-- Both are short-lived (minutes), shared by every process so that a login started in one can finish
-- in another, and consumed with one atomic statement each. Plain tables, not events: nothing about
-- them is worth replaying, and the audit trail lives in the SamlLogin* events.
CREATE TABLE saml_requests (
  request_id  text PRIMARY KEY,
  employer_id text NOT NULL,
  -- Where the browser goes after sign-in (already checked against the allowlist), kept here rather
  -- than in RelayState, which is unsigned and limited to 80 bytes by the SAML bindings.
  return_to   text,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX saml_requests_by_expiry ON saml_requests (expires_at);

CREATE TABLE saml_assertions (
  employer_id  text NOT NULL,
  assertion_id text NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (employer_id, assertion_id)
);
CREATE INDEX saml_assertions_by_expiry ON saml_assertions (expires_at);
