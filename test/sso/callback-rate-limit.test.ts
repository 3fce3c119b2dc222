// Every refused SAML callback is audited, so refusals are limited per client address: once an address
// has used its allowance, callbacks get 429 before validation and add nothing to the event store.
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { createSsoCapability } from '../../src/sso/capability.ts';
import { createTestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, postCallback } from './sso-test-kit.ts';

// Practically no refill during the test: the allowance is the burst.
const LIMIT = { perSecond: 0.0001, burst: 3 };

describe('refused SAML callbacks per client address', () => {
  let service: TestService;
  beforeAll(async () => {
    const sso = createSsoCapability({ callbackFailureLimit: LIMIT });
    // The loopback proxy is trusted, so tests can present any client address in X-Forwarded-For.
    service = await startTestService({ env: { TRUST_PROXY: '127.0.0.1' }, capabilities: capabilities.map((capability) => (capability.name === 'sso' ? sso : capability)) });
  });
  afterAll(async () => service?.stop());

  it('answers 429 with retry-after once the allowance is spent, without validating or recording more', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, await createTestIdp());
    const junk = Buffer.from('<samlp:Response>not signed</samlp:Response>').toString('base64');
    for (let i = 0; i < LIMIT.burst; i++) expect((await postCallback(service, tenant.employerId, junk)).status).toBe(401);

    const response = await fetch(`${service.url}/api/auth/saml/callback/${tenant.employerId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ SAMLResponse: junk }),
    });
    expect(response.status).toBe(429);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await response.json()).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/retry in/) });

    const failures = await service.ctx.db.slonik.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM events WHERE tenant_id = ${tenant.employerId} AND type = 'SamlLoginFailed'`);
    expect(failures).toBe(LIMIT.burst);
  });

  it('counts refusals of IPv6 clients per /64: rotating addresses in one /64 does not renew the allowance', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, await createTestIdp());
    const junk = Buffer.from('<samlp:Response>not signed</samlp:Response>').toString('base64');
    const callbackFrom = (address: string) =>
      fetch(`${service.url}/api/auth/saml/callback/${tenant.employerId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
        body: new URLSearchParams({ SAMLResponse: junk }),
      });
    for (let host = 1; host <= LIMIT.burst; host++) expect((await callbackFrom(`2001:db8:77:1::${host}`)).status).toBe(401);
    expect((await callbackFrom('2001:db8:77:1:ffff::42')).status).toBe(429);
    expect((await callbackFrom('2001:db8:77:2::1')).status).toBe(401); // another /64 has its own allowance
  });
});
