import { emailDomainsProjection } from '../../projections/email-domains/projection.ts';
import type { Capability } from '../capability.ts';
import { emailDomainAuditMappers } from './audit.ts';
import { emailDomainEvents } from './events.ts';
import { emailDomainRoutes } from './routes.ts';

export const emailDomainsCapability: Capability = {
  name: 'email-domains',
  events: emailDomainEvents,
  routes: [emailDomainRoutes()],
  projections: [emailDomainsProjection],
  auditMappers: emailDomainAuditMappers,
};
