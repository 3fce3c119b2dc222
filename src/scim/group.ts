// The SCIM group aggregate: stream tenant-<employerId>.group-<groupId>. A group is a named set of
// users of one employer, pushed by the IdP (Okta "Push Groups", Entra ID group provisioning). Members
// change by deltas, so two concurrent PATCHes adding different members both take effect.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { GroupAttributesChanged, GroupEvent } from './events.ts';

export type GroupCommand =
  | { type: 'CreateGroup'; groupId: string; employerId: string; displayName: string; externalId: string | null; members: string[] }
  /** Member ids to add must already be checked to be users of the employer (decide stays pure). */
  | { type: 'ChangeGroup'; displayName: string; externalId: string | null; addMembers: string[]; removeMembers: string[] }
  | { type: 'DeleteGroup' };

export type GroupState =
  | { status: 'absent' | 'deleted' }
  | { status: 'present'; groupId: string; employerId: string; displayName: string; externalId: string | null; members: string[] };

export const groupDecider: Decider<GroupCommand, GroupEvent, GroupState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    if (event.type === 'GroupCreated') {
      const { groupId, employerId, displayName, externalId, members } = event.data;
      return { status: 'present', groupId, employerId, displayName, externalId, members };
    }
    if (state.status !== 'present') return state;
    switch (event.type) {
      case 'GroupAttributesChanged':
        return { ...state, ...event.data.changes };
      case 'GroupMembersAdded':
        return { ...state, members: [...state.members, ...event.data.userIds] };
      case 'GroupMembersRemoved': {
        const removed = new Set(event.data.userIds);
        return { ...state, members: state.members.filter((id) => !removed.has(id)) };
      }
      case 'GroupDeleted':
        return { status: 'deleted' };
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreateGroup') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'GROUP_EXISTS', 'The group already exists.');
      const { groupId, employerId, displayName, externalId, members } = command;
      return [{ type: 'GroupCreated', data: { groupId, employerId, displayName, externalId, members: [...new Set(members)] } }];
    }
    if (state.status !== 'present') throw new DomainError('not_found', 'NOT_FOUND', 'The group was not found.');
    if (command.type === 'DeleteGroup') return [{ type: 'GroupDeleted', data: { groupId: state.groupId } }];

    const events: GroupEvent[] = [];
    const changes: GroupAttributesChanged['data']['changes'] = {};
    if (command.displayName !== state.displayName) changes.displayName = command.displayName;
    if (command.externalId !== state.externalId) changes.externalId = command.externalId;
    if (Object.keys(changes).length > 0) events.push({ type: 'GroupAttributesChanged', data: { groupId: state.groupId, changes } });
    const current = new Set(state.members);
    const removing = new Set(command.removeMembers.filter((id) => current.has(id)));
    if (removing.size > 0) events.push({ type: 'GroupMembersRemoved', data: { groupId: state.groupId, userIds: [...removing] } });
    const adding = [...new Set(command.addMembers)].filter((id) => !current.has(id) || removing.has(id));
    if (adding.length > 0) events.push({ type: 'GroupMembersAdded', data: { groupId: state.groupId, userIds: adding } });
    return events;
  },
};

export const groupStream = (employerId: string, groupId: string) => tenantStream(employerId, 'group', groupId);
