// The user aggregate's rules for SCIM writes and API keys, with no database: a PUT or PATCH is one
// decision (profile, then the active flag), and a key is recorded only for an active user. Personal
// fields reach the decider sealed (here opaque `v1.` strings: the decider never opens them); which
// fields changed is worked out before, on the opened profile (`profileChanges`).
import { describe, expect, it } from 'vitest';
import type { UserEvent, UserRegistered } from '../../src/tenants/events.ts';
import { profileChanges, userDecider } from '../../src/tenants/user.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(userDecider);
const profile = { email: 'ada@acme.test', userName: 'ada@acme.test', givenName: null, familyName: null, displayName: null, externalId: null };
const registered: UserRegistered = { type: 'UserRegistered', data: { userId: 'u1', employerId: 'emp_1', role: 'PATIENT', active: true, source: 'scim', personal: { sealed: 'v1.profile' } } };
const deactivated: UserEvent = { type: 'UserDeactivated', data: { userId: 'u1', scimDeleted: false } };
const deleted: UserEvent = { type: 'UserDeactivated', data: { userId: 'u1', scimDeleted: true } };

describe('user decider', () => {
  it('registers a user with its profile sealed, and only once', () => {
    const register = { type: 'RegisterUser', userId: 'u1', employerId: 'emp_1', role: 'PATIENT', sealed: 'v1.profile', active: true, source: 'scim' } as const;
    given([]).when(register).then([registered]);
    given([registered]).when(register).thenThrows({ kind: 'conflict', code: 'USER_EXISTS' });
  });

  it('decides a profile change and a deactivation together, profile first', () => {
    given([registered]).when({ type: 'ChangeUser', changes: { fields: ['displayName'], sealed: 'v1.changes' }, active: false }).then([
      { type: 'UserProfileUpdated', data: { userId: 'u1', fields: ['displayName'], personal: { sealed: 'v1.changes' } } },
      deactivated,
    ]);
  });

  it('reactivates without other events when only the active flag changes, and does nothing when nothing changes', () => {
    given([registered, deactivated]).when({ type: 'ChangeUser', changes: null, active: true }).then([{ type: 'UserReactivated', data: { userId: 'u1' } }]);
    given([registered]).when({ type: 'ChangeUser', changes: null, active: true }).then([]);
  });

  it('erases a deactivated user only, once', () => {
    const erase = { type: 'EraseUser', erasedAt: '2026-01-01T00:00:00.000Z' } as const;
    const erasedEvent: UserEvent = { type: 'UserErased', data: { userId: 'u1', erasedAt: erase.erasedAt } };
    given([registered]).when(erase).thenThrows({ kind: 'conflict', code: 'USER_ACTIVE' });
    given([registered, deactivated]).when(erase).then([erasedEvent]);
    given([registered, deleted, erasedEvent]).when(erase).then([]);
  });

  it('refuses any change to a user deleted through SCIM', () => {
    given([registered, deleted]).when({ type: 'ChangeUser', changes: null, active: false }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
  });

  it('folds users registered before sealing (version 1, upcast to clear fields) as any other', () => {
    const clear: UserRegistered = { type: 'UserRegistered', data: { ...registered.data, personal: { clear: profile } } };
    given([clear, deactivated]).when({ type: 'ChangeUser', changes: null, active: true }).then([{ type: 'UserReactivated', data: { userId: 'u1' } }]);
  });

  it('records a key of an active user, and refuses one of an inactive user', () => {
    given([registered]).when({ type: 'RecordApiKey', keyId: 'key_1' }).then([{ type: 'UserApiKeyCreated', data: { userId: 'u1', keyId: 'key_1' } }]);
    given([registered, deactivated]).when({ type: 'RecordApiKey', keyId: 'key_2' }).thenThrows({ kind: 'forbidden', code: 'USER_DEACTIVATED' });
    given([]).when({ type: 'RecordApiKey', keyId: 'key_3' }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
  });
});

describe('user decider: the role', () => {
  const toAdmin: UserEvent = { type: 'UserRoleChanged', data: { userId: 'u1', role: 'EMPLOYER_ADMIN' } };
  it('changes the role only when it differs', () => {
    given([registered]).when({ type: 'ChangeRole', role: 'EMPLOYER_ADMIN' }).then([toAdmin]);
    given([registered, toAdmin]).when({ type: 'ChangeRole', role: 'EMPLOYER_ADMIN' }).then([]);
    given([registered, toAdmin]).when({ type: 'ChangeRole', role: 'PATIENT' }).then([{ type: 'UserRoleChanged', data: { userId: 'u1', role: 'PATIENT' } }]);
  });

  it("takes an administrator's role away with its deactivation, role first", () => {
    given([registered, toAdmin]).when({ type: 'DeactivateUser', scimDelete: false })
      .then([{ type: 'UserRoleChanged', data: { userId: 'u1', role: 'PATIENT' } }, deactivated]);
    given([registered]).when({ type: 'DeactivateUser', scimDelete: false }).then([deactivated]);
  });
});

describe('profileChanges', () => {
  it('keeps only the fields whose values differ (e-mail lists compared whatever their key order)', () => {
    const emails = [{ value: 'ada@acme.test', type: 'work', primary: true }];
    const current = { ...profile, emails };
    expect(profileChanges(current, { ...profile, displayName: 'Ada', emails: [{ primary: true, type: 'work', value: 'ada@acme.test' }] })).toEqual({ displayName: 'Ada' });
    expect(profileChanges(current, { ...current, emails: undefined })).toEqual({});
  });
});
