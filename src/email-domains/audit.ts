// Audit records of e-mail domain claims. The reservation events live in system streams, outside every
// employer's audit trail.
import { auditTarget, type AuditMappers } from '../capability.ts';

const domainTarget = auditTarget('email_domain', 'domain');

export const emailDomainAuditMappers: AuditMappers = {
  EmailDomainClaimed: (event) => ({ action: 'email_domain.claim', ...domainTarget(event) }),
  EmailDomainVerified: (event) => ({ action: 'email_domain.verify', ...domainTarget(event), details: { method: event.data.method } }),
  EmailDomainClaimWithdrawn: (event) => ({ action: 'email_domain.withdraw', ...domainTarget(event) }),
};
