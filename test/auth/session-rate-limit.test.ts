// The rate limit of session-authenticated calls (SESSION_RATE_LIMIT_PER_MIN): per user by default,
// per session with SESSION_RATE_LIMIT_BY=session. Past it, 429 RATE_LIMITED with retry-after, and the
// refused call changes nothing; other users, and API keys, are not affected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';

/** A minute's allowance: taken at once, it refills one call every 30 s, longer than these tests take. */
const LIMIT = 2;

const services: TestService[] = [];
afterAll(async () => Promise.all(services.map((service) => service.stop())));

async function serviceLimiting(by: 'user' | 'session') {
  const service = await startTestService({ env: { SESSION_RATE_LIMIT_PER_MIN: String(LIMIT), SESSION_RATE_LIMIT_BY: by } });
  services.push(service);
  return service;
}

const listWebhooks = (service: TestService, cookie: string) => fetch(`${service.url}/api/employer/webhooks`, { headers: service.sessionHeaders(cookie) });

describe('session rate limit', () => {
  let service: TestService;
  beforeAll(async () => (service = await serviceLimiting('user')));

  it('answers 429 RATE_LIMITED with retry-after past the limit of a user, whose refused call changes nothing', async () => {
    const tenant = await service.createTenant();
    const key = await createApiKey(service, { cookie: tenant.cookie }, { scopes: ['webhook:manage'] }); // the first call
    expect((await listWebhooks(service, tenant.cookie)).status).toBe(200); // the second

    const refused = await fetch(`${service.url}/api/employer/webhooks`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.com/in', events: ['test.ping'] }),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringContaining('Too many calls by this user') });

    // A second session of the same user shares the allowance; the API key, another user, do not.
    const again = await service.signIn(tenant.employerId, tenant.adminUserId);
    expect((await listWebhooks(service, again)).status).toBe(429);
    const listed = await fetch(`${service.url}/api/employer/webhooks`, { headers: keyHeaders(key.rawKey) });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { webhooks: unknown[] }).webhooks).toEqual([]);
    const other = await service.createTenant();
    expect((await listWebhooks(service, other.cookie)).status).toBe(200);
  });

  it('counts each session apart with SESSION_RATE_LIMIT_BY=session', async () => {
    const bySession = await serviceLimiting('session');
    const tenant = await bySession.createTenant();
    for (let call = 0; call < LIMIT; call++) expect((await listWebhooks(bySession, tenant.cookie)).status).toBe(200);
    expect((await listWebhooks(bySession, tenant.cookie)).status).toBe(429);
    const second = await bySession.signIn(tenant.employerId, tenant.adminUserId);
    expect((await listWebhooks(bySession, second)).status).toBe(200);
  });
});
