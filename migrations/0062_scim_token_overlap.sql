-- The SCIM token a rotation replaced, still working until previous_scim_token_valid_until
-- (ScimTokenOverlapStarted; cleared by ScimTokenOverlapEnded). Authentication reads it beside the
-- current token (projections/sso/queries.ts findScimTokenOwner).
ALTER TABLE sso_configurations
  ADD COLUMN previous_scim_token_id text,
  ADD COLUMN previous_scim_token_hash text UNIQUE,
  ADD COLUMN previous_scim_token_valid_until timestamptz;
