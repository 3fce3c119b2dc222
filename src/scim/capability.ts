// SCIM 2.0 provisioning: routes under /api/scim/v2, the group aggregate's read model and audit records.
// Users are the tenants capability's aggregate; its audit mappers record scim.user.* by the actor type.
import { scimGroupsProjection } from '../../projections/scim-groups/projection.ts';
import type { Capability } from '../capability.ts';
import { createScimRateLimiter, type Clock, type ScimRateLimits } from './rate-limit.ts';
import { scimRoutes } from './routes.ts';
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
    routes: [scimRoutes(limiter)],
    projections: [scimGroupsProjection],
    auditMappers: {
      GroupCreated: (event) => ({ action: 'scim.group.create', targetType: 'group', targetId: String(event.data.groupId), details: { displayName: event.data.displayName } }),
      GroupAttributesChanged: (event) => ({ action: 'scim.group.update', targetType: 'group', targetId: String(event.data.groupId), details: { fields: Object.keys(event.data.changes as object) } }),
      GroupMembersAdded: (event) => ({ action: 'scim.group.update', targetType: 'group', targetId: String(event.data.groupId), details: { membersAdded: event.data.userIds } }),
      GroupMembersRemoved: (event) => ({ action: 'scim.group.update', targetType: 'group', targetId: String(event.data.groupId), details: { membersRemoved: event.data.userIds } }),
      GroupDeleted: (event) => ({ action: 'scim.group.delete', targetType: 'group', targetId: String(event.data.groupId) }),
    },
  };
}

export const scimCapability = createScimCapability();
