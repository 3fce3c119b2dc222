-- E-mail domain claims (src/email-domains). `email_domain_claims` is the read model of
-- projections/email-domains (rebuildable from events): one row per employer and claimed domain, gone
-- once the claim is withdrawn. At most one row per domain is verified: the domain's reservation stream
-- guarantees it, not this table.
CREATE TABLE email_domain_claims (
  employer_id         text NOT NULL,
  domain              text NOT NULL,
  verification_token  text NOT NULL,
  claimed_at          timestamptz NOT NULL,
  -- NULL while the claim is pending.
  verified_at         timestamptz,
  verification_method text,
  PRIMARY KEY (employer_id, domain)
);
CREATE INDEX email_domain_claims_by_employer ON email_domain_claims (employer_id, claimed_at DESC, domain);
-- The holders of verified domains, looked up by a cohort upload's addresses.
CREATE INDEX email_domain_claims_verified ON email_domain_claims (domain) WHERE verified_at IS NOT NULL;
