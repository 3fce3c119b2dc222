-- The IdP's Single Logout URL (HTTP-Redirect binding), from its metadata or set directly (src/sso/saml.ts).
ALTER TABLE sso_configurations ADD COLUMN saml_logout_url text;
