// Two server processes on one database: a client revoked through one has its tokens refused by the
// other within a second, and a jti accepted by one is refused by the other.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { accessToken, clientAssertion, registerSmartClient, requestToken } from '../support/smart-clients.ts';
import { waitUntil } from '../webhooks/helpers.ts';

let first: TestService;
let second: TestService;
let tenant: Awaited<ReturnType<TestService['createTenant']>>;

beforeAll(async () => {
  first = await startTestService();
  // An API-only process, as a scaled-out deployment runs them; the first runs the projections.
  second = await startTestService({ databaseUri: first.ctx.db.connectionUri, roles: ['api'] });
  tenant = await first.createTenant();
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

describe('SMART clients across two server processes', () => {
  it('a revocation in one process is refused by the other within a second', async () => {
    const client = await registerSmartClient(first, tenant, { scopes: ['system/*.rs'] });
    const token = await accessToken(first, client);
    const read = () => fetch(`${second.url}/api/fhir/Patient`, { headers: { authorization: `Bearer ${token}` } });
    expect((await read()).status).toBe(200); // the second process has the grant cached
    const revoked = await fetch(`${first.url}/api/employer/smart-clients/${client.clientId}`, { method: 'DELETE', headers: first.sessionHeaders(tenant.cookie) });
    expect(revoked.status).toBe(200);
    const started = Date.now();
    await waitUntil('the second process to refuse the token', async () => (await read()).status === 401, 1000);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('a jti accepted by one process is refused by the other', async () => {
    const client = await registerSmartClient(first, tenant, { scopes: ['system/*.rs'] });
    const jti = randomUUID();
    expect((await requestToken(first, await clientAssertion(first, client, { jti }))).status).toBe(200);
    // Each test process has its own PUBLIC_BASE_URL: the second's token endpoint is the assertion's aud there.
    const again = await requestToken(second, await clientAssertion(second, client, { jti, aud: `${second.url}/api/oauth/token` }));
    expect(again).toMatchObject({ status: 400, body: { error: 'invalid_grant', error_description: expect.stringContaining('jti') } });
    const fresh = await requestToken(second, await clientAssertion(second, client, { aud: `${second.url}/api/oauth/token` }));
    expect(fresh.status).toBe(200);
  });
});
