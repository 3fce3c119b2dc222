import { tenantsProjection } from '../../projections/tenants/projection.ts';
import type { Capability } from '../capability.ts';
import { tenantAuditMappers } from './audit.ts';
import { tenantEvents } from './events.ts';

export const tenantsCapability: Capability = {
  name: 'tenants',
  events: tenantEvents,
  keyedProjections: (encryptionKey) => [tenantsProjection(encryptionKey)],
  auditMappers: tenantAuditMappers,
};
