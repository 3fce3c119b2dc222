// Read models `groups` and `group_members` of the SCIM group aggregate (src/scim/group.ts).
import { sql } from 'slonik';
import type { GroupEvent } from '../../src/scim/events.ts';
import { defineProjection, type Projection } from '../../src/event-store/projection.ts';

export const scimGroupsProjection = defineProjection<GroupEvent>({
  name: 'scim-groups',
  tables: ['groups', 'group_members'],
  eventTypes: ['GroupCreated', 'GroupAttributesChanged', 'GroupMembersAdded', 'GroupMembersRemoved', 'GroupDeleted'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const at = event.metadata.occurredAt;
      const version = sql.fragment`${event.streamRevision.toString()}::bigint`;
      const touch = () =>
        tx.query(sql.unsafe`UPDATE groups SET version = ${version}, updated_at = ${at} WHERE id = ${event.data.groupId}`);
      switch (event.type) {
        case 'GroupCreated': {
          const { groupId, employerId, displayName, externalId, members } = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO groups (id, employer_id, display_name, external_id, version, created_at, updated_at)
            VALUES (${groupId}, ${employerId}, ${displayName}, ${externalId}, ${version}, ${at}, ${at})`);
          await addMembers(tx, groupId, members, event.position.prepare);
          break;
        }
        case 'GroupAttributesChanged': {
          const { displayName, externalId } = event.data.changes;
          await tx.query(sql.unsafe`
            UPDATE groups SET
              display_name = ${displayName === undefined ? sql.fragment`display_name` : sql.fragment`${displayName}`},
              external_id = ${externalId === undefined ? sql.fragment`external_id` : sql.fragment`${externalId}`}
            WHERE id = ${event.data.groupId}`);
          await touch();
          break;
        }
        case 'GroupMembersAdded':
          await addMembers(tx, event.data.groupId, event.data.userIds, event.position.prepare);
          await touch();
          break;
        case 'GroupMembersRemoved':
          await tx.query(sql.unsafe`
            DELETE FROM group_members WHERE group_id = ${event.data.groupId} AND user_id = ANY(${sql.array(event.data.userIds, 'text')})`);
          await touch();
          break;
        case 'GroupDeleted':
          await tx.query(sql.unsafe`DELETE FROM group_members WHERE group_id = ${event.data.groupId}`);
          await tx.query(sql.unsafe`DELETE FROM groups WHERE id = ${event.data.groupId}`);
          break;
      }
    }
  },
});

async function addMembers(tx: Parameters<Projection['apply']>[0], groupId: string, userIds: string[], position: bigint) {
  if (userIds.length === 0) return;
  await tx.query(sql.unsafe`
    INSERT INTO group_members (group_id, user_id, employer_id, added_at, added_rank)
    SELECT g.id, member.user_id, g.employer_id, ${position.toString()}::bigint, member.rank
    FROM groups g, unnest(${sql.array(userIds, 'text')}) WITH ORDINALITY AS member(user_id, rank)
    WHERE g.id = ${groupId}
    ON CONFLICT DO NOTHING`);
}
