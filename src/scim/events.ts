// Events of the SCIM group aggregate (src/scim/group.ts), applied by projections/scim-groups/.
import type { DomainEvent } from '../event-store/decider.ts';

export type GroupCreated = DomainEvent<'GroupCreated', { groupId: string; employerId: string; displayName: string; externalId: string | null; members: string[] }>;
/** Only the attributes that changed. */
export type GroupAttributesChanged = DomainEvent<'GroupAttributesChanged', { groupId: string; changes: { displayName?: string; externalId?: string | null } }>;
export type GroupMembersAdded = DomainEvent<'GroupMembersAdded', { groupId: string; userIds: string[] }>;
export type GroupMembersRemoved = DomainEvent<'GroupMembersRemoved', { groupId: string; userIds: string[] }>;
/** The group and its memberships are gone; its id answers 404 from now on. */
export type GroupDeleted = DomainEvent<'GroupDeleted', { groupId: string }>;
export type GroupEvent = GroupCreated | GroupAttributesChanged | GroupMembersAdded | GroupMembersRemoved | GroupDeleted;
