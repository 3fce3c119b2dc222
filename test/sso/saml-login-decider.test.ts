// The SAML login record's rule, with no database: a login's stream holds its one event, and a second
// record of the same login is refused.
import { describe, it } from 'vitest';
import type { SamlLoginEvent } from '../../src/sso/events.ts';
import { samlLoginDecider } from '../../src/sso/saml-login.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(samlLoginDecider);
const succeeded: SamlLoginEvent = { type: 'SamlLoginSucceeded', data: { loginId: 'login_1', userId: 'u1', assertionId: '_a1', provisioned: false, idpInitiated: false } };
const failed: SamlLoginEvent = { type: 'SamlLoginFailed', data: { loginId: 'login_2', reason: 'USER_DEACTIVATED', clientIp: '203.0.113.7' } };

describe('SAML login decider', () => {
  it('records a login, successful or (as older streams hold) failed', () => {
    given([]).when({ type: 'RecordSamlLogin', event: succeeded }).then([succeeded]);
    given([]).when({ type: 'RecordSamlLogin', event: failed }).then([failed]);
  });

  it('refuses to record a login its stream already holds', () => {
    given([succeeded]).when({ type: 'RecordSamlLogin', event: succeeded }).thenThrows({ kind: 'conflict', code: 'CONFLICT' });
  });
});
