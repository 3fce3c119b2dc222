// The group aggregate's rules, given / when / then, without a database.
import { describe, it } from 'vitest';
import type { GroupEvent } from '../../src/scim/events.ts';
import { groupDecider } from '../../src/scim/group.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(groupDecider);
const created: GroupEvent = { type: 'GroupCreated', data: { groupId: 'g1', employerId: 'emp1', displayName: 'Eng', externalId: null, members: ['u1', 'u2'] } };
const change = (overrides: Partial<{ displayName: string; externalId: string | null; addMembers: string[]; removeMembers: string[] }>) => ({
  type: 'ChangeGroup' as const,
  displayName: 'Eng',
  externalId: null,
  addMembers: [],
  removeMembers: [],
  ...overrides,
});

describe('group decider', () => {
  it('creates a group once, with its members listed once each', () => {
    given([]).when({ type: 'CreateGroup', groupId: 'g1', employerId: 'emp1', displayName: 'Eng', externalId: null, members: ['u1', 'u2', 'u1'] }).then([
      { ...created },
    ]);
    given([created]).when({ type: 'CreateGroup', groupId: 'g1', employerId: 'emp1', displayName: 'Eng', externalId: null, members: [] }).thenThrows({ kind: 'conflict' });
  });

  it('records only what changes: attributes, removed and added members', () => {
    given([created]).when(change({})).then([]);
    given([created]).when(change({ displayName: 'Engineering', addMembers: ['u2', 'u3'], removeMembers: ['u1', 'u9'] })).then([
      { type: 'GroupAttributesChanged', data: { groupId: 'g1', changes: { displayName: 'Engineering' } } },
      { type: 'GroupMembersRemoved', data: { groupId: 'g1', userIds: ['u1'] } },
      { type: 'GroupMembersAdded', data: { groupId: 'g1', userIds: ['u3'] } },
    ]);
    given([created]).when(change({ externalId: 'ext-1' })).then([{ type: 'GroupAttributesChanged', data: { groupId: 'g1', changes: { externalId: 'ext-1' } } }]);
  });

  it('applies member deltas to the current members (a concurrent add is kept)', () => {
    const concurrentAdd: GroupEvent = { type: 'GroupMembersAdded', data: { groupId: 'g1', userIds: ['u5'] } };
    // a PATCH computed before u5 arrived removes u1 only; u5 stays
    given([created, concurrentAdd]).when(change({ removeMembers: ['u1'] })).then([{ type: 'GroupMembersRemoved', data: { groupId: 'g1', userIds: ['u1'] } }]);
  });

  it('deletes a group; a deleted or unknown group is 404', () => {
    given([created]).when({ type: 'DeleteGroup' }).then([{ type: 'GroupDeleted', data: { groupId: 'g1' } }]);
    given([created, { type: 'GroupDeleted', data: { groupId: 'g1' } }]).when({ type: 'DeleteGroup' }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
    given([]).when(change({ displayName: 'x' })).thenThrows({ kind: 'not_found' });
  });
});
