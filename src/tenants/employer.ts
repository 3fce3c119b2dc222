// The employer (tenant) aggregate: stream tenant-<employerId>.employer-<employerId>. It holds the
// employer's administrators and the mapping of IdP groups to the administrator role, so the rule "at
// least one administrator remains" is decided on one stream: a removal is appended together with the
// user's UserRoleChanged (or UserDeactivated), and a concurrent removal loses the revision race.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import { NO_ADMIN_ROLE_MAPPING, type AdminRoleMapping, type AdminRoleSource, type EmployerEvent } from './events.ts';

export type CreateEmployer = { type: 'CreateEmployer'; employerId: string; name: string; now: string };
/**
 * `knownAdministrators`: the employer's active administrators as the users read model shows them,
 * taken only while the stream has not recorded its administrators (employers created before it did).
 */
type AdministratorChange = { userId: string; via: AdminRoleSource; knownAdministrators: readonly string[] };
export type EmployerCommand =
  | CreateEmployer
  | { type: 'SetAdminRoleMapping'; mapping: AdminRoleMapping }
  | ({ type: 'AddAdministrator' } & AdministratorChange)
  | ({ type: 'RemoveAdministrator' } & AdministratorChange)
  | { type: 'RecordAdministratorRemovalRefused'; userId: string; via: AdminRoleSource };

export type EmployerState = {
  exists: boolean;
  employerId: string | null;
  name: string | null;
  /** null until the stream records them (AdministratorsRecorded). */
  administrators: readonly string[] | null;
  adminRoleMapping: AdminRoleMapping;
};

export const employerDecider: Decider<EmployerCommand, EmployerEvent, EmployerState> = {
  initialState: () => ({ exists: false, employerId: null, name: null, administrators: null, adminRoleMapping: NO_ADMIN_ROLE_MAPPING }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'EmployerCreated':
        return { ...state, exists: true, employerId: event.data.employerId, name: event.data.name };
      case 'AdminRoleMappingSet':
        return { ...state, adminRoleMapping: event.data.mapping };
      case 'AdministratorsRecorded':
        return { ...state, administrators: event.data.userIds };
      case 'AdministratorAdded':
        return { ...state, administrators: [...(state.administrators ?? []), event.data.userId] };
      case 'AdministratorRemoved':
        return { ...state, administrators: (state.administrators ?? []).filter((id) => id !== event.data.userId) };
      case 'AdministratorRemovalRefused':
        return state;
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreateEmployer') {
      if (state.exists) throw new DomainError('conflict', 'EMPLOYER_EXISTS', `Employer ${command.employerId} already exists.`);
      return [{ type: 'EmployerCreated', data: { employerId: command.employerId, name: command.name, createdAt: command.now } }];
    }
    if (!state.exists) throw new DomainError('not_found', 'NOT_FOUND', 'The employer was not found.');
    switch (command.type) {
      case 'SetAdminRoleMapping':
        return sameMapping(state.adminRoleMapping, command.mapping) ? [] : [{ type: 'AdminRoleMappingSet', data: { employerId: state.employerId!, mapping: command.mapping } }];
      case 'AddAdministrator': {
        const { recorded, administrators } = recordedAdministrators(state, command.knownAdministrators);
        if (administrators.includes(command.userId)) return recorded;
        return [...recorded, { type: 'AdministratorAdded', data: { userId: command.userId, via: command.via } }];
      }
      case 'RemoveAdministrator': {
        const { recorded, administrators } = recordedAdministrators(state, command.knownAdministrators);
        if (!administrators.includes(command.userId)) return recorded;
        if (administrators.length === 1) {
          throw new DomainError('conflict', 'LAST_ADMINISTRATOR', 'The last administrator of the employer cannot be removed by the identity provider.', { userId: command.userId });
        }
        return [...recorded, { type: 'AdministratorRemoved', data: { userId: command.userId, via: command.via } }];
      }
      case 'RecordAdministratorRemovalRefused':
        return [{ type: 'AdministratorRemovalRefused', data: { userId: command.userId, via: command.via } }];
    }
  },
};

/** The administrator set, recording the read model's first when the stream holds none yet. */
function recordedAdministrators(state: EmployerState, known: readonly string[]): { recorded: EmployerEvent[]; administrators: readonly string[] } {
  if (state.administrators !== null) return { recorded: [], administrators: state.administrators };
  const userIds = [...new Set(known)];
  return { recorded: [{ type: 'AdministratorsRecorded', data: { userIds } }], administrators: userIds };
}

function sameMapping(a: AdminRoleMapping, b: AdminRoleMapping): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export const employerStream = (employerId: string) => tenantStream(employerId, 'employer', employerId);
