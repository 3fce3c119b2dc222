// Issue 24: IdP-initiated SAML login (an unsolicited signed Response), off by default and on per
// employer, accepted only with the audience, recipient, time and one-time-use checks of an SP-initiated
// login; it lands on the console or an allowed RelayState and is audited as such.
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, followSignIn, postCallback, postSso, spUrls, type Tenant } from './sso-test-kit.ts';

let service: TestService;
let idp: TestIdp;
let tenant: Tenant;

beforeAll(async () => {
  service = await startTestService({ env: { RETURN_TO_ALLOWED_ORIGINS: 'https://portal.employer.example' } });
  idp = await createTestIdp();
  tenant = await service.createTenant();
  await enableSaml(service, tenant, idp);
});
afterAll(async () => service?.stop());

let counter = 0;
/** A Response no request of the service asked for: no InResponseTo anywhere, signed by the employer's IdP. */
function unsolicited(overrides: Partial<Parameters<TestIdp['craftResponse']>[0]> = {}) {
  counter += 1;
  return idp.craftResponse({
    requestId: 'unused',
    responseInResponseTo: null,
    assertionInResponseTo: null,
    ...spUrls(service, tenant.employerId),
    email: `idp.started.${counter}.${Date.now()}@employer.example`,
    ...overrides,
  });
}

describe('IdP-initiated login', () => {
  it('is refused while the employer has not turned it on', async () => {
    expect(await postCallback(service, tenant.employerId, unsolicited())).toMatchObject({ status: 401, body: { reason: 'UNKNOWN_IN_RESPONSE_TO' } });
  });

  it('is a SAML trust setting: an API key only proposes it', async () => {
    const key = await createApiKey(service, tenant, { scopes: ['sso:manage'], name: 'sso automation' });
    const response = await fetch(`${service.url}/api/employer/sso`, { method: 'POST', headers: { ...keyHeaders(key.rawKey), 'content-type': 'application/json' }, body: JSON.stringify({ samlIdpInitiatedLogin: true }) });
    expect(response.status).toBe(202);
    expect(await postCallback(service, tenant.employerId, unsolicited())).toMatchObject({ status: 401, body: { reason: 'UNKNOWN_IN_RESPONSE_TO' } });
  });

  describe('turned on', () => {
    beforeAll(async () => {
      expect((await postSso(service, tenant, { samlIdpInitiatedLogin: true })).status).toBe(200);
    });

    it('signs in once, lands on the console, and is audited as IdP-initiated; the same response again is a replay', async () => {
      const response = unsolicited();
      const first = await postCallback(service, tenant.employerId, response);
      expect(first.status).toBe(302);
      const signedIn = await followSignIn(first.location!);
      // The session it made is live (the IdP's user, signed in here).
      expect((await fetch(`${service.url}/api/auth/session`, { headers: { cookie: signedIn.cookie! } })).status).toBe(200);
      expect(await postCallback(service, tenant.employerId, response)).toMatchObject({ status: 401, body: { reason: 'REPLAYED' } });
      const actions = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ action: z.string() }))`
        SELECT action FROM audit_log WHERE employer_id = ${tenant.employerId} AND action LIKE 'auth.saml.login%' ORDER BY global_position`);
      expect(actions).toEqual(['auth.saml.login_idp_initiated']);
    });

    it('lands on an allowed RelayState, and on the console instead of one outside the allowlist', async () => {
      const allowed = await postCallback(service, tenant.employerId, unsolicited(), 'https://portal.employer.example/welcome');
      expect(new URL(allowed.location!).origin).toBe('https://portal.employer.example');
      const path = await postCallback(service, tenant.employerId, unsolicited(), '/#/sso');
      expect(path.location).toContain(`next=${encodeURIComponent('/#/sso')}`);
      const elsewhere = await postCallback(service, tenant.employerId, unsolicited(), 'https://evil.example/steal');
      expect(elsewhere.status).toBe(302);
      expect(elsewhere.location).not.toContain('evil.example');
      expect(new URL(elsewhere.location!).origin).toBe(service.url);
    });

    it.each([
      ['another audience', { audience: 'https://other-sp.example/metadata' }, 'AUDIENCE_MISMATCH'],
      ['another recipient', { recipient: 'https://other-sp.example/acs' }, 'RECIPIENT_MISMATCH'],
      ['another destination', { destination: 'https://other-sp.example/acs' }, 'DESTINATION_MISMATCH'],
      ['an expired assertion', { notBefore: new Date(Date.now() - 3_600_000), notOnOrAfter: new Date(Date.now() - 1_800_000) }, 'EXPIRED'],
      ['an unsigned Response InResponseTo beside an unsolicited assertion', { responseInResponseTo: '_forged' }, 'UNKNOWN_IN_RESPONSE_TO'],
    ])('refuses %s', async (_name, overrides, reason) => {
      expect(await postCallback(service, tenant.employerId, unsolicited(overrides))).toMatchObject({ status: 401, body: { reason } });
    });
  });
});
