import { tenantsProjection } from '../../projections/tenants/projection.ts';
import type { Capability } from '../capability.ts';
import { tenantAuditMappers } from './audit.ts';

export const tenantsCapability: Capability = {
  name: 'tenants',
  projections: [tenantsProjection],
  auditMappers: tenantAuditMappers,
};
