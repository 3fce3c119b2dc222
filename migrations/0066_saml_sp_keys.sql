-- The service's own SAML service-provider key pairs of each employer (src/sso/saml-sp-keys.ts):
-- [{ keyId, certificate, sealedPrivateKey, issuedAt, retiresAt }], and whether AuthnRequests are signed.
ALTER TABLE sso_configurations
  ADD COLUMN saml_sp_keys jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN saml_sign_authn_requests boolean NOT NULL DEFAULT false;
