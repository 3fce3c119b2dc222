-- A rolled API key (src/api-keys/api-key.ts, ApiKeyRolled): the key that replaced it, and the instant
-- from which it is revoked (the end of the roll's overlap). Read by the status rule
-- (projections/api-keys/queries.ts apiKeyStatus) and the request pipeline's key cache.
ALTER TABLE api_keys
  ADD COLUMN rolled_into text,
  ADD COLUMN roll_revokes_at timestamptz;
