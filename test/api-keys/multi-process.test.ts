// Two server processes of the service on one database: what one process does to a key reaches the
// other within a second, and the rate limit holds across both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders, PROBE_SCOPE } from '../support/api-keys.ts';
import { eventually } from '../support/eventually.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService, testClock } from './key-service.ts';

describe('API keys across two server processes', () => {
  const clock = testClock(); // both processes in the same rate-limit window
  let first: TestService;
  let second: TestService;
  let tenant: Awaited<ReturnType<TestService['createTenant']>>;
  const probe = (on: TestService, rawKey: string) => fetch(`${on.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
  const codeOf = async (response: Response) => response.status === 200 ? 'OK' : ((await response.json()) as { code: string }).code;

  beforeAll(async () => {
    first = await startKeyService({ clock });
    // an API-only process, as a horizontally scaled deployment runs them; the first runs the projections
    second = await startKeyService({ clock, databaseUri: first.ctx.db.connectionUri, roles: ['api'] });
    tenant = await first.createTenant();
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  it('a revocation in one process is seen by the other within 1 second', async () => {
    const { rawKey, id } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE] });
    expect((await probe(second, rawKey)).status).toBe(200); // the second process has it cached
    await fetch(`${first.url}/api/employer/api-keys/${id}`, { method: 'DELETE', headers: first.sessionHeaders(tenant.cookie) });
    expect(await eventually(async () => (await codeOf(await probe(second, rawKey))) === 'API_KEY_REVOKED', 1000)).toBe(true);
  });

  it('a suspension and a resumption in one process are seen by the other within 1 second', async () => {
    const { rawKey, id } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE] });
    expect((await probe(second, rawKey)).status).toBe(200);
    const patch = (status: string) => fetch(`${first.url}/api/employer/api-keys/${id}`, {
      method: 'PATCH', headers: { ...first.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ status }),
    });
    await patch('inactive');
    expect(await eventually(async () => (await codeOf(await probe(second, rawKey))) === 'API_KEY_INACTIVE', 1000)).toBe(true);
    await patch('active');
    expect(await eventually(async () => (await codeOf(await probe(second, rawKey))) === 'OK', 1000)).toBe(true);
  });

  it('a scope removed by PATCH in one process is refused by the other within 1 second', async () => {
    const { rawKey, id } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE, 'fhir:read'] });
    expect((await probe(second, rawKey)).status).toBe(200); // the second process has it cached
    await fetch(`${first.url}/api/employer/api-keys/${id}`, {
      method: 'PATCH', headers: { ...first.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ scopes: ['fhir:read'] }),
    });
    expect(await eventually(async () => (await codeOf(await probe(second, rawKey))) === 'INSUFFICIENT_SCOPE', 1000)).toBe(true);
  });

  it('a roll in one process reaches the other within 1 second: the old key ends with its overlap there too', async () => {
    const { rawKey, id } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE] });
    expect((await probe(second, rawKey)).status).toBe(200);
    const start = clock.now();
    try {
      await fetch(`${first.url}/api/employer/api-keys/${id}/roll`, {
        method: 'POST', headers: { ...first.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ overlapSeconds: 0 }),
      });
      expect(await eventually(async () => (await codeOf(await probe(second, rawKey))) === 'API_KEY_REVOKED', 1000)).toBe(true);
    } finally {
      clock.set(start);
    }
  });

  it('a small limit holds exactly across two processes', async () => {
    const { rawKey } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE], rateLimitPerMinute: 10 });
    const statuses: number[] = [];
    for (let call = 0; call < 30; call++) statuses.push((await probe(call % 2 === 0 ? first : second, rawKey)).status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(10);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
  });

  it('the default limit of 120 holds across two processes under concurrent load, within the documented lease slack', async () => {
    const { rawKey } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE] });
    const statuses: number[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const responses = await Promise.all(Array.from({ length: 20 }, (_, index) => probe(index % 2 === 0 ? first : second, rawKey)));
      statuses.push(...responses.map((response) => response.status));
    }
    const allowed = statuses.filter((status) => status === 200).length;
    expect(allowed).toBeLessThanOrEqual(120);
    // permits leased (6 at a time) by one process cannot be spent by the other: at most 5 go unused
    expect(allowed).toBeGreaterThanOrEqual(115);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 429)).toBe(true);
  });

  it('a process writes its pending telemetry when it shuts down', async () => {
    const { rawKey, id } = await createApiKey(first, tenant, { scopes: [PROBE_SCOPE] });
    for (let call = 0; call < 3; call++) expect((await probe(second, rawKey)).status).toBe(200);
    await second.stop();
    const key = await (await fetch(`${first.url}/api/employer/api-keys/${id}`, { headers: first.sessionHeaders(tenant.cookie) })).json();
    expect(key).toMatchObject({ requestCount: 3, lastUsedIp: '127.0.0.1' });
  });
});
