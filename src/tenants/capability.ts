import { tenantsProjection } from '../../projections/tenants/projection.ts';
import type { Capability } from '../capability.ts';
import { tenantAuditMappers } from './audit.ts';
import { tenantEvents } from './events.ts';
import { adminRoleRoutes } from './routes.ts';
import { userRoutes } from './user-routes.ts';
import { tenantConsumers, tenantTasks } from './tasks.ts';

export const tenantsCapability: Capability = {
  name: 'tenants',
  events: tenantEvents,
  keyedProjections: (encryptionKey) => [tenantsProjection(encryptionKey)],
  auditMappers: tenantAuditMappers,
  routes: [adminRoleRoutes, userRoutes],
  consumers: tenantConsumers,
  tasks: tenantTasks,
};
