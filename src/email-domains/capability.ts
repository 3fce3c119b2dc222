import { emailDomainsProjection } from '../../projections/email-domains/projection.ts';
import type { Capability } from '../capability.ts';
import { emailDomainEvents } from './events.ts';
import { emailDomainRoutes } from './routes.ts';

const domainTarget = (event: { data: Record<string, unknown> }) => ({ targetType: 'email_domain', targetId: String(event.data.domain) });

export const emailDomainsCapability: Capability = {
  name: 'email-domains',
  events: emailDomainEvents,
  routes: [emailDomainRoutes()],
  projections: [emailDomainsProjection],
  // The reservation events live in system streams, outside every employer's audit trail.
  auditMappers: {
    EmailDomainClaimed: (event) => ({ action: 'email_domain.claim', ...domainTarget(event) }),
    EmailDomainVerified: (event) => ({ action: 'email_domain.verify', ...domainTarget(event), details: { method: event.data.method } }),
    EmailDomainClaimWithdrawn: (event) => ({ action: 'email_domain.withdraw', ...domainTarget(event) }),
  },
};
