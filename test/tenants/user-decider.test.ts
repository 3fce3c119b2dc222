// The user aggregate's rules for SCIM writes and API keys, with no database: a PUT or PATCH is one
// decision (profile, then the active flag), and a key is recorded only for an active user.
import { describe, it } from 'vitest';
import type { UserEvent, UserRegistered } from '../../src/tenants/events.ts';
import { userDecider } from '../../src/tenants/user.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(userDecider);
const profile = { email: 'ada@acme.test', userName: 'ada@acme.test', givenName: null, familyName: null, displayName: null, externalId: null };
const registered: UserRegistered = { type: 'UserRegistered', data: { userId: 'u1', employerId: 'emp_1', role: 'PATIENT', active: true, source: 'scim', ...profile } };
const deactivated: UserEvent = { type: 'UserDeactivated', data: { userId: 'u1', scimDeleted: false } };
const deleted: UserEvent = { type: 'UserDeactivated', data: { userId: 'u1', scimDeleted: true } };

describe('user decider', () => {
  it('decides a profile change and a deactivation together, profile first', () => {
    given([registered]).when({ type: 'ChangeUser', changes: { ...profile, displayName: 'Ada' }, active: false }).then([
      { type: 'UserProfileUpdated', data: { userId: 'u1', changes: { displayName: 'Ada' } } },
      deactivated,
    ]);
  });

  it('reactivates without other events when only the active flag changes, and does nothing when nothing changes', () => {
    given([registered, deactivated]).when({ type: 'ChangeUser', changes: profile, active: true }).then([{ type: 'UserReactivated', data: { userId: 'u1' } }]);
    given([registered]).when({ type: 'ChangeUser', changes: profile, active: true }).then([]);
  });

  it('refuses any change to a user deleted through SCIM', () => {
    given([registered, deleted]).when({ type: 'ChangeUser', changes: profile, active: false }).thenThrows({ status: 404, code: 'NOT_FOUND' });
  });

  it('records a key of an active user, and refuses one of an inactive user', () => {
    given([registered]).when({ type: 'RecordApiKey', keyId: 'key_1' }).then([{ type: 'UserApiKeyCreated', data: { userId: 'u1', keyId: 'key_1' } }]);
    given([registered, deactivated]).when({ type: 'RecordApiKey', keyId: 'key_2' }).thenThrows({ status: 403, code: 'USER_DEACTIVATED' });
    given([]).when({ type: 'RecordApiKey', keyId: 'key_3' }).thenThrows({ status: 404, code: 'NOT_FOUND' });
  });
});
