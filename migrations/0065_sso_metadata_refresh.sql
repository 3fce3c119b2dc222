-- The IdP metadata read again (src/sso/saml-certificates.ts): signing certificates the metadata stopped
-- listing, trusted until their grace period ends ([{ certificate, trustedUntil }]), when the metadata last
-- changed what is trusted, and the last refresh's failure ({ at, code, message }) until one succeeds.
ALTER TABLE sso_configurations
  ADD COLUMN saml_retiring_certificates jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN saml_metadata_refreshed_at timestamptz,
  ADD COLUMN saml_metadata_refresh_failure jsonb;
