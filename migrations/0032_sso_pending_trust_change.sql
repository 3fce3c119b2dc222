-- A SAML trust change an API key proposed, pending until an administrator confirms it in a session
-- (src/sso/sso-configuration.ts): { changeId, changes, proposedAt, proposedBy: { type, id } }, or null.
ALTER TABLE sso_configurations ADD COLUMN pending_trust_change jsonb;
