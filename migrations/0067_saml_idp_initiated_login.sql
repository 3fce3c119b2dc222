-- Whether the employer accepts IdP-initiated (unsolicited) SAML responses (src/sso/saml.ts); off by default.
ALTER TABLE sso_configurations ADD COLUMN saml_idp_initiated_login boolean NOT NULL DEFAULT false;
