// Audit records of e-mail domain claims. The reservation events live in system streams, outside every
// employer's audit trail.
import type { AuditMappers } from '../capability.ts';

const domainTarget = (event: { data: Record<string, unknown> }) => ({ targetType: 'email_domain', targetId: String(event.data.domain) });

export const emailDomainAuditMappers: AuditMappers = {
  EmailDomainClaimed: (event) => ({ action: 'email_domain.claim', ...domainTarget(event) }),
  EmailDomainVerified: (event) => ({ action: 'email_domain.verify', ...domainTarget(event), details: { method: event.data.method } }),
  EmailDomainClaimWithdrawn: (event) => ({ action: 'email_domain.withdraw', ...domainTarget(event) }),
};
