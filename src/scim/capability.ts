// SCIM 2.0 provisioning: routes under /api/scim/v2, the group aggregate's read model and audit records.
import { scimGroupsProjection } from '../../projections/scim-groups/projection.ts';
import type { Capability } from '../capability.ts';
import { scimAuditMappers } from './audit.ts';
import { createScimRateLimiter, type Clock, type ScimRateLimits } from './rate-limit.ts';
import { scimRoutes } from './routes/plugin.ts';
import { scimRequestLogRoutes } from './routes/request-log.ts';
import { groupEvents } from './events.ts';

/** Limits and clock are options so that tests can freeze time and benchmarks can lift the limits. */
export function createScimCapability(options: { rateLimits?: ScimRateLimits; clock?: Clock } = {}): Capability {
  const limiter = createScimRateLimiter({
    ...(options.rateLimits ? { limits: options.rateLimits } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return {
    name: 'scim',
    events: groupEvents,
    routes: [scimRoutes(limiter), scimRequestLogRoutes],
    projections: [scimGroupsProjection],
    auditMappers: scimAuditMappers,
  };
}

export const scimCapability = createScimCapability();
