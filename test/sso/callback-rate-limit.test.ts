// SAML callbacks are limited per client address: each spends a token before its body is read, a login
// that succeeds gives it back, and once an address has spent its allowance, callbacks get 429 unread
// and add nothing to the refusal counts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { createSsoCapability } from '../../src/sso/capability.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, recordSamlRefusals, spUrls, startLogin } from './sso-test-kit.ts';

// Practically no refill during the test: the allowance is the burst.
const LIMIT = { perSecond: 0.0001, burst: 3 };
const junk = Buffer.from('<samlp:Response>not signed</samlp:Response>').toString('base64');

describe('SAML callbacks per client address', () => {
  let service: TestService;
  let idp: TestIdp;
  beforeAll(async () => {
    const sso = createSsoCapability({ callbackLimit: LIMIT });
    // The loopback proxy is trusted, so tests can present any client address in X-Forwarded-For.
    service = await startTestService({ env: { TRUST_PROXY: '127.0.0.1' }, capabilities: capabilities.map((capability) => (capability.name === 'sso' ? sso : capability)) });
    idp = await createTestIdp();
  });
  afterAll(async () => service?.stop());

  const callbackFrom = (employerId: string, address: string, samlResponse = junk) =>
    fetch(`${service.url}/api/auth/saml/callback/${employerId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
      body: new URLSearchParams({ SAMLResponse: samlResponse }),
      redirect: 'manual',
    });

  it('answers 429 with retry-after once the allowance is spent, without validating or counting more', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp);
    for (let i = 0; i < LIMIT.burst; i++) expect((await callbackFrom(tenant.employerId, '198.51.100.10')).status).toBe(401);

    const response = await callbackFrom(tenant.employerId, '198.51.100.10');
    expect(response.status).toBe(429);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await response.json()).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/retry in/) });

    const { minutes } = await recordSamlRefusals(service);
    expect(minutes.filter((minute) => minute.employerId === tenant.employerId).reduce((sum, minute) => sum + minute.refusals, 0)).toBe(LIMIT.burst);
  });

  it('counts IPv6 clients per /64: rotating addresses in one /64 does not renew the allowance', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp);
    for (let host = 1; host <= LIMIT.burst; host++) expect((await callbackFrom(tenant.employerId, `2001:db8:77:1::${host}`)).status).toBe(401);
    expect((await callbackFrom(tenant.employerId, '2001:db8:77:1:ffff::42')).status).toBe(429);
    expect((await callbackFrom(tenant.employerId, '2001:db8:77:2::1')).status).toBe(401); // another /64 has its own allowance
  });

  it('gives the token of a successful login back: logins never use up the allowance of refusals', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp);
    for (let login = 0; login < LIMIT.burst + 2; login++) {
      const { requestId } = await startLogin(service, tenant.employerId);
      const samlResponse = idp.craftResponse({ requestId: requestId!, ...spUrls(service, tenant.employerId), email: `member-${randomUUID()}@acme.test` });
      expect((await callbackFrom(tenant.employerId, '198.51.100.20', samlResponse)).status).toBe(302);
    }
    for (let i = 0; i < LIMIT.burst; i++) expect((await callbackFrom(tenant.employerId, '198.51.100.20')).status).toBe(401);
    expect((await callbackFrom(tenant.employerId, '198.51.100.20')).status).toBe(429);
  });
});
