// Read model `email_domain_claims`: each employer's claims on e-mail domains, pending or verified, as
// domain management lists them and as a cohort upload looks up the holders of its addresses' domains.
import { sql } from 'slonik';
import type { EmailDomainClaimEvent } from '../../src/email-domains/events.ts';
import { defineProjection } from '../../src/event-store/projection.ts';

export const emailDomainsProjection = defineProjection<EmailDomainClaimEvent>({
  name: 'email-domains',
  tables: ['email_domain_claims'],
  eventTypes: ['EmailDomainClaimed', 'EmailDomainVerified', 'EmailDomainClaimWithdrawn'],
  // A verification answers once this model has it, so a cohort upload right after it is refused.
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const employerId = event.metadata.tenantId!;
      switch (event.type) {
        case 'EmailDomainClaimed':
          await tx.query(sql.unsafe`
            INSERT INTO email_domain_claims (employer_id, domain, verification_token, claimed_at)
            VALUES (${employerId}, ${event.data.domain}, ${event.data.verificationToken}, ${event.data.claimedAt})`);
          break;
        case 'EmailDomainVerified':
          await tx.query(sql.unsafe`
            UPDATE email_domain_claims SET verified_at = ${event.data.verifiedAt}, verification_method = ${event.data.method}
            WHERE employer_id = ${employerId} AND domain = ${event.data.domain}`);
          break;
        case 'EmailDomainClaimWithdrawn':
          await tx.query(sql.unsafe`DELETE FROM email_domain_claims WHERE employer_id = ${employerId} AND domain = ${event.data.domain}`);
          break;
      }
    }
  },
});
