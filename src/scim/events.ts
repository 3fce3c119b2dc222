// Events of the SCIM group aggregate (src/scim/group.ts), applied by projections/scim-groups/.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

const groupCreated = eventSchema('GroupCreated', z.object({
  groupId: z.string(),
  employerId: z.string(),
  displayName: z.string(),
  externalId: z.string().nullable(),
  members: z.array(z.string()),
}));
/** Only the attributes that changed. */
const groupAttributesChanged = eventSchema('GroupAttributesChanged', z.object({
  groupId: z.string(),
  changes: z.object({ displayName: z.string().optional(), externalId: z.string().nullable().optional() }),
}));
const groupMembersAdded = eventSchema('GroupMembersAdded', z.object({ groupId: z.string(), userIds: z.array(z.string()) }));
const groupMembersRemoved = eventSchema('GroupMembersRemoved', z.object({ groupId: z.string(), userIds: z.array(z.string()) }));
/** The group and its memberships are gone; its id answers 404 from now on. */
const groupDeleted = eventSchema('GroupDeleted', z.object({ groupId: z.string() }));

export const groupEvents = [groupCreated, groupAttributesChanged, groupMembersAdded, groupMembersRemoved, groupDeleted] as const;

export type GroupAttributesChanged = EventOf<typeof groupAttributesChanged>;
export type GroupEvent = EventOf<(typeof groupEvents)[number]>;
