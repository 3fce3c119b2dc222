// The user aggregate: stream tenant-<employerId>.user-<userId>. Users come from the CLI (the first
// admin), SAML just-in-time provisioning and SCIM. Deactivation is soft: the record is kept.
//
// The user's personal fields reach the decider already sealed under the user's data key (the
// commands in commands.ts seal them), so no event is ever decided with them in clear. The decider
// needs none of their values: the commands open the profile with the key, work out what changed
// (`profileChanges`) and hand over the changes sealed, with their field names.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { Role } from '../auth/principal.ts';
import type { PersonalFields, ProfileField, UserEvent, UserProfile, UserSource } from './events.ts';

/** Changed profile fields: their names, and their values sealed under the user's data key. */
export type SealedChanges = { fields: ProfileField[]; sealed: string };

export type UserCommand =
  /** `sealed`: the whole profile sealed under the new user's data key. */
  | { type: 'RegisterUser'; userId: string; employerId: string; role: Role; sealed: string; active: boolean; source: UserSource }
  /** `changes`: null when nothing in the profile changes. */
  | { type: 'UpdateUserProfile'; changes: SealedChanges | null }
  | { type: 'DeactivateUser'; scimDelete: boolean }
  | { type: 'ReactivateUser' }
  /** SCIM PUT or PATCH: the profile and the active flag in one decision (one append). */
  | { type: 'ChangeUser'; changes: SealedChanges | null; active: boolean }
  /** The administrator role given or taken by the IdP's groups (src/tenants/admin-role.ts). */
  | { type: 'ChangeRole'; role: Role }
  /** Refused for an inactive user, so no key can be created after its creator's deactivation. */
  | { type: 'RecordApiKey'; keyId: string }
  /** Erasure: refused for an active user (deactivate first); repeated, it decides nothing. */
  | { type: 'EraseUser'; erasedAt: string };

export type UserState =
  | { status: 'absent' }
  | {
      status: 'active' | 'inactive';
      userId: string;
      employerId: string;
      role: Role;
      /** The personal fields of every registration and change, in order: `openProfile` merges them. */
      personal: PersonalFields[];
      scimDeleted: boolean;
      apiKeyIds: string[];
      /** Its data key destroyed (UserErased). */
      erased?: boolean;
    };

export const userDecider: Decider<UserCommand, UserEvent, UserState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'UserRegistered': {
        const { userId, employerId, role, active, personal } = event.data;
        return { status: active ? 'active' : 'inactive', userId, employerId, role, personal: [personal], scimDeleted: false, apiKeyIds: [] };
      }
      case 'UserProfileUpdated':
        return state.status === 'absent' ? state : { ...state, personal: [...state.personal, event.data.personal] };
      case 'UserDeactivated':
        return state.status === 'absent' ? state : { ...state, status: 'inactive', scimDeleted: state.scimDeleted || event.data.scimDeleted };
      case 'UserReactivated':
        return state.status === 'absent' ? state : { ...state, status: 'active' };
      case 'UserRoleChanged':
        return state.status === 'absent' ? state : { ...state, role: event.data.role };
      case 'UserApiKeyCreated':
        return state.status === 'absent' ? state : { ...state, apiKeyIds: [...state.apiKeyIds, event.data.keyId] };
      case 'UserErased':
        return state.status === 'absent' ? state : { ...state, personal: [], erased: true };
    }
  },
  decide: function decide(command, state): UserEvent[] {
    if (command.type === 'RegisterUser') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'USER_EXISTS', 'The user already exists.');
      const { userId, employerId, role, sealed, active, source } = command;
      return [{ type: 'UserRegistered', data: { userId, employerId, role, active, source, personal: { sealed } } }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'The user was not found.');
    switch (command.type) {
      case 'UpdateUserProfile': {
        // A deleted user's e-mail address may belong to someone else by now.
        if (state.scimDeleted) throw new DomainError('not_found', 'NOT_FOUND', 'The user was deleted.');
        const { changes } = command;
        return changes === null || changes.fields.length === 0
          ? []
          : [{ type: 'UserProfileUpdated', data: { userId: state.userId, fields: changes.fields, personal: { sealed: changes.sealed } } }];
      }
      case 'DeactivateUser': {
        if (state.status === 'inactive' && (state.scimDeleted || !command.scimDelete)) return [];
        // Deactivation takes the administrator role away (the employer's AdministratorRemoved is in the
        // same append): a reactivated user is an administrator again only through a mapped group.
        const demoted: UserEvent[] = state.role === 'EMPLOYER_ADMIN' ? [{ type: 'UserRoleChanged', data: { userId: state.userId, role: 'PATIENT' } }] : [];
        return [...demoted, { type: 'UserDeactivated', data: { userId: state.userId, scimDeleted: command.scimDelete } }];
      }
      case 'ReactivateUser':
        if (state.scimDeleted) throw new DomainError('not_found', 'NOT_FOUND', 'The user was deleted.');
        return state.status === 'active' ? [] : [{ type: 'UserReactivated', data: { userId: state.userId } }];
      case 'ChangeUser': {
        const updated = decide({ type: 'UpdateUserProfile', changes: command.changes }, state);
        const afterUpdate = updated.reduce(userDecider.evolve, state);
        return [...updated, ...decide(command.active ? { type: 'ReactivateUser' } : { type: 'DeactivateUser', scimDelete: false }, afterUpdate)];
      }
      case 'ChangeRole':
        return state.role === command.role ? [] : [{ type: 'UserRoleChanged', data: { userId: state.userId, role: command.role } }];
      case 'RecordApiKey':
        if (state.status !== 'active') throw new DomainError('forbidden', 'USER_DEACTIVATED', 'A deactivated user cannot create API keys.');
        return [{ type: 'UserApiKeyCreated', data: { userId: state.userId, keyId: command.keyId } }];
      case 'EraseUser':
        if (state.erased) return [];
        if (state.status === 'active') throw new DomainError('conflict', 'USER_ACTIVE', 'Only a deactivated user can be erased: deactivate the user first.');
        return [{ type: 'UserErased', data: { userId: state.userId, erasedAt: command.erasedAt } }];
    }
  },
};

/** The fields of `wanted` that differ from `current` (undefined means "not given", not "cleared"). */
export function profileChanges(current: UserProfile, wanted: Partial<UserProfile>): Partial<UserProfile> {
  return Object.fromEntries(
    Object.entries(wanted).filter(([key, value]) => value !== undefined && !sameValue(current[key as keyof UserProfile], value)),
  ) as Partial<UserProfile>;
}

/**
 * Profile values are strings, null or small arrays and objects, whose key order jsonb does not keep.
 * An attribute absent from older events and one cleared (null) are the same: no change.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (a == null && b == null) return true;
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
