// The user aggregate: stream tenant-<employerId>.user-<userId>. Users come from the CLI (the first
// admin), SAML just-in-time provisioning and SCIM. Deactivation is soft: the record is kept.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { Role } from '../auth/principal.ts';
import type { UserEvent, UserProfile, UserSource } from './events.ts';

export type UserCommand =
  | { type: 'RegisterUser'; userId: string; employerId: string; role: Role; profile: UserProfile; active: boolean; source: UserSource }
  | { type: 'UpdateUserProfile'; changes: Partial<UserProfile> }
  | { type: 'DeactivateUser'; scimDelete: boolean }
  | { type: 'ReactivateUser' }
  /** SCIM PUT or PATCH: the profile and the active flag in one decision (one append). */
  | { type: 'ChangeUser'; changes: Partial<UserProfile>; active: boolean }
  /** Refused for an inactive user, so no key can be created after its creator's deactivation. */
  | { type: 'RecordApiKey'; keyId: string };

export type UserState =
  | { status: 'absent' }
  | { status: 'active' | 'inactive'; userId: string; employerId: string; role: Role; profile: UserProfile; scimDeleted: boolean; apiKeyIds: string[] };

export const userDecider: Decider<UserCommand, UserEvent, UserState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'UserRegistered': {
        const { userId, employerId, role, active, source: _source, ...profile } = event.data;
        return { status: active ? 'active' : 'inactive', userId, employerId, role, profile, scimDeleted: false, apiKeyIds: [] };
      }
      case 'UserProfileUpdated':
        return state.status === 'absent' ? state : { ...state, profile: { ...state.profile, ...event.data.changes } };
      case 'UserDeactivated':
        return state.status === 'absent' ? state : { ...state, status: 'inactive', scimDeleted: state.scimDeleted || event.data.scimDeleted };
      case 'UserReactivated':
        return state.status === 'absent' ? state : { ...state, status: 'active' };
      case 'UserApiKeyCreated':
        return state.status === 'absent' ? state : { ...state, apiKeyIds: [...state.apiKeyIds, event.data.keyId] };
    }
  },
  decide: function decide(command, state): UserEvent[] {
    if (command.type === 'RegisterUser') {
      if (state.status !== 'absent') throw new DomainError(409, 'USER_EXISTS', 'The user already exists.');
      const { userId, employerId, role, profile, active, source } = command;
      return [{ type: 'UserRegistered', data: { userId, employerId, role, active, source, ...profile } }];
    }
    if (state.status === 'absent') throw new DomainError(404, 'NOT_FOUND', 'The user was not found.');
    switch (command.type) {
      case 'UpdateUserProfile': {
        // A deleted user's e-mail address may belong to someone else by now.
        if (state.scimDeleted) throw new DomainError(404, 'NOT_FOUND', 'The user was deleted.');
        const changes = Object.fromEntries(
          Object.entries(command.changes).filter(([key, value]) => value !== undefined && !sameValue(state.profile[key as keyof UserProfile], value)),
        ) as Partial<UserProfile>;
        return Object.keys(changes).length === 0 ? [] : [{ type: 'UserProfileUpdated', data: { userId: state.userId, changes } }];
      }
      case 'DeactivateUser':
        if (state.status === 'inactive' && (state.scimDeleted || !command.scimDelete)) return [];
        return [{ type: 'UserDeactivated', data: { userId: state.userId, scimDeleted: command.scimDelete } }];
      case 'ReactivateUser':
        if (state.scimDeleted) throw new DomainError(404, 'NOT_FOUND', 'The user was deleted.');
        return state.status === 'active' ? [] : [{ type: 'UserReactivated', data: { userId: state.userId } }];
      case 'ChangeUser': {
        const updated = decide({ type: 'UpdateUserProfile', changes: command.changes }, state);
        const afterUpdate = updated.reduce(userDecider.evolve, state);
        return [...updated, ...decide(command.active ? { type: 'ReactivateUser' } : { type: 'DeactivateUser', scimDelete: false }, afterUpdate)];
      }
      case 'RecordApiKey':
        if (state.status !== 'active') throw new DomainError(403, 'USER_DEACTIVATED', 'A deactivated user cannot create API keys.');
        return [{ type: 'UserApiKeyCreated', data: { userId: state.userId, keyId: command.keyId } }];
    }
  },
};

/** Profile values are strings, null or (emails) small arrays of objects, whose key order jsonb does not keep. */
function sameValue(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(canonicalJson(a)) === JSON.stringify(canonicalJson(b));
}

function canonicalJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalJson);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, entry]) => entry !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, entry]) => [key, canonicalJson(entry)]),
  );
}

export const userStream = (employerId: string, userId: string) => tenantStream(employerId, 'user', userId);
