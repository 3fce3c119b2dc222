// The employer aggregate's rule, with no database: an employer is created once.
import { describe, it } from 'vitest';
import { employerDecider } from '../../src/tenants/employer.ts';
import type { EmployerCreated } from '../../src/tenants/events.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(employerDecider);
const now = '2030-01-01T00:00:00.000Z';
const create = { type: 'CreateEmployer', employerId: 'emp_1', name: 'Acme', now } as const;
const created: EmployerCreated = { type: 'EmployerCreated', data: { employerId: 'emp_1', name: 'Acme', createdAt: now } };

describe('employer decider', () => {
  it('creates an employer', () => {
    given([]).when(create).then([created]);
  });

  it('refuses to create an employer that exists, whatever its name', () => {
    given([created]).when({ ...create, name: 'Acme Two' }).thenThrows({ kind: 'conflict', code: 'EMPLOYER_EXISTS' });
  });
});

describe('employer decider: administrators from the IdP', () => {
  const mapping = { scimGroups: ['Admins'], samlAttribute: 'groups', samlValues: ['admins'] };
  const recorded = (userIds: string[]) => ({ type: 'AdministratorsRecorded', data: { userIds } }) as const;
  const added = (userId: string) => ({ type: 'AdministratorAdded', data: { userId, via: 'scim_group' } }) as const;
  const removed = (userId: string) => ({ type: 'AdministratorRemoved', data: { userId, via: 'scim_group' } }) as const;
  const change = (type: 'AddAdministrator' | 'RemoveAdministrator', userId: string, knownAdministrators: string[] = []) =>
    ({ type, userId, via: 'scim_group', knownAdministrators }) as const;

  it('sets a mapping once; the same mapping again changes nothing', () => {
    given([created]).when({ type: 'SetAdminRoleMapping', mapping }).then([{ type: 'AdminRoleMappingSet', data: { employerId: 'emp_1', mapping } }]);
    given([created, { type: 'AdminRoleMappingSet', data: { employerId: 'emp_1', mapping } }]).when({ type: 'SetAdminRoleMapping', mapping }).then([]);
  });

  it('records the administrators the read model knows the first time the set is needed, then decides on its own', () => {
    given([created]).when(change('AddAdministrator', 'u2', ['u1'])).then([recorded(['u1']), added('u2')]);
    given([created, recorded(['u1'])]).when(change('AddAdministrator', 'u1', ['stale'])).then([]);
    given([created, recorded(['u1']), added('u2')]).when(change('RemoveAdministrator', 'u1', ['stale'])).then([removed('u1')]);
  });

  it('refuses to remove the last administrator; removing a non-administrator changes nothing', () => {
    given([created, recorded(['u1'])]).when(change('RemoveAdministrator', 'u1')).thenThrows({ kind: 'conflict', code: 'LAST_ADMINISTRATOR' });
    given([created]).when(change('RemoveAdministrator', 'u1', ['u1'])).thenThrows({ kind: 'conflict', code: 'LAST_ADMINISTRATOR' });
    given([created, recorded(['u1', 'u2']), removed('u2')]).when(change('RemoveAdministrator', 'u1')).thenThrows({ kind: 'conflict', code: 'LAST_ADMINISTRATOR' });
    given([created, recorded(['u1'])]).when(change('RemoveAdministrator', 'u3')).then([]);
  });

  it('records a refused removal', () => {
    given([created]).when({ type: 'RecordAdministratorRemovalRefused', userId: 'u1', via: 'deactivation' })
      .then([{ type: 'AdministratorRemovalRefused', data: { userId: 'u1', via: 'deactivation' } }]);
  });

  it('refuses administrator changes of an employer that does not exist', () => {
    given([]).when(change('AddAdministrator', 'u1')).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
  });
});
