// Issue 20, item 6: 20 unknown API keys (or 80 bad SCIM tokens) from one address made every tenant's
// valid key (token) from that address get 429 for the rest of the window; behind a load balancer or an
// IdP's shared egress, one anonymous client locked every tenant out. Now the failure throttles hold
// back credentials that do not exist only: each process knows, without a database read, which key
// and token hashes exist, so a real credential skips its address's failure throttle and guesses past
// the allowance cost no lookup. The per-token SCIM limit still comes before the token is validated.
// Clocks stand still (rate windows and token buckets refill only when the test says), so a throttle
// lifting by itself cannot make a test pass.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKeysCapability } from '../../src/api-keys/capability.ts';
import { INVALID_KEY_ATTEMPTS_PER_MIN } from '../../src/api-keys/pipeline.ts';
import { capabilities } from '../../src/capabilities.ts';
import type { Capability } from '../../src/capability.ts';
import { createScimCapability } from '../../src/scim/capability.ts';
import { DEFAULT_SCIM_RATE_LIMITS } from '../../src/scim/rate-limit.ts';
import { testClock } from '../api-keys/key-service.ts';
import { createApiKey, keyHeaders, PROBE_SCOPE, probeCapability } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { scimClient, scimTenant } from '../scim/scim-client.ts';
import { waitUntil } from '../webhooks/helpers.ts';

const clock = testClock();
const frozenCapabilities: Capability[] = [
  ...capabilities.map((capability) =>
    capability.name === 'api-keys' ? createApiKeysCapability({ clock: clock.now }) : capability.name === 'scim' ? createScimCapability({ clock: clock.now }) : capability,
  ),
  probeCapability,
];
// The loopback proxy is trusted, so every request can say which client address it comes from.
const env = { TRUST_PROXY: '127.0.0.1' };

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env, capabilities: frozenCapabilities });
});
afterAll(async () => service?.stop());

const unknownKey = () => `mt_live_${randomBytes(32).toString('hex')}`;
const unknownToken = () => `scim_${randomBytes(32).toString('base64url')}`;

describe('API keys: invalid keys slow down invalid keys only', () => {
  const probeFrom = (target: Pick<TestService, 'url'>, address: string, rawKey: string) =>
    fetch(`${target.url}/probe/scoped`, { headers: keyHeaders(rawKey, { 'x-forwarded-for': address }) });

  it('20 unknown keys from one address do not lock out the valid keys of every tenant from that address', async () => {
    const address = '198.51.100.20';
    const [a, b] = [await service.createTenant(), await service.createTenant()];
    const keyA = await createApiKey(service, a, { scopes: [PROBE_SCOPE] });
    const keyB = await createApiKey(service, b, { scopes: [PROBE_SCOPE] });
    const revoked = await createApiKey(service, b, { scopes: [PROBE_SCOPE] });
    await fetch(`${service.url}/api/employer/api-keys/${revoked.id}`, { method: 'DELETE', headers: service.sessionHeaders(b.cookie) });

    for (let attempt = 0; attempt < INVALID_KEY_ATTEMPTS_PER_MIN; attempt++) expect((await probeFrom(service, address, unknownKey())).status).toBe(401);
    const guess = await probeFrom(service, address, unknownKey());
    expect(guess.status).toBe(429); // guesses are still throttled
    expect(await guess.json()).toMatchObject({ code: 'RATE_LIMITED' });

    expect((await probeFrom(service, address, keyA.rawKey)).status).toBe(200);
    expect((await probeFrom(service, address, keyB.rawKey)).status).toBe(200);
    // A key made after the throttle began, never looked up by this process before.
    const keyC = await createApiKey(service, a, { scopes: [PROBE_SCOPE] });
    expect((await probeFrom(service, address, keyC.rawKey)).status).toBe(200);
    // A revoked key is a real key, answered as what it is.
    expect(await (await probeFrom(service, address, revoked.rawKey)).json()).toMatchObject({ code: 'API_KEY_REVOKED' });
    expect((await probeFrom(service, address, unknownKey())).status).toBe(429);
  });

  it('another process knows the keys made before it started, and learns of those made since', async () => {
    const address = '198.51.100.21';
    const tenant = await service.createTenant();
    const before = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    const second = await startTestService({ databaseUri: service.ctx.db.connectionUri, roles: ['api'], env, capabilities: frozenCapabilities });
    try {
      for (let attempt = 0; attempt < INVALID_KEY_ATTEMPTS_PER_MIN; attempt++) expect((await probeFrom(second, address, unknownKey())).status).toBe(401);
      expect((await probeFrom(second, address, unknownKey())).status).toBe(429);
      expect((await probeFrom(second, address, before.rawKey)).status).toBe(200);

      // Made in the first process: the second learns of it by the projection's notification.
      const since = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
      await waitUntil('the new key known to the second process', async () => (await probeFrom(second, address, since.rawKey)).status === 200);
      expect((await probeFrom(second, address, unknownKey())).status).toBe(429);
    } finally {
      await second.stop();
    }
  });
});

describe('SCIM tokens: bad tokens slow down bad tokens only', () => {
  const from = (address: string) => ({ 'x-forwarded-for': address });

  it('80 bad tokens from one address do not lock out the valid tokens of every tenant from that address', async () => {
    const address = '198.51.100.30';
    const [a, b] = [await scimTenant(service), await scimTenant(service)];
    const { burst } = DEFAULT_SCIM_RATE_LIMITS.failedAuthPerAddress;
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 80; attempt++) statuses.push((await scimClient(service, unknownToken()).request('GET', '/Users', undefined, from(address))).status);
    expect(statuses).toEqual([...Array(burst).fill(401), ...Array(80 - burst).fill(429)]);

    expect((await a.scim.request('GET', '/Users', undefined, from(address))).status).toBe(200);
    expect((await b.scim.request('GET', '/Users', undefined, from(address))).status).toBe(200);

    // A token issued after the throttle began is current at once; the one it replaced is a guess now.
    const rotation = await fetch(`${service.url}/api/employer/sso/scim-token/rotate`, {
      method: 'POST', headers: { ...service.sessionHeaders(a.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ overlapSeconds: 0 }),
    });
    const rotated = ((await rotation.json()) as { scimBearerToken: string }).scimBearerToken;
    expect((await scimClient(service, rotated).request('GET', '/Users', undefined, from(address))).status).toBe(200);
    expect((await a.scim.request('GET', '/Users', undefined, from(address))).status).toBe(429);
    expect((await fetch(`${service.url}/api/scim/v2/Users`, { headers: from(address) })).status).toBe(429);
    expect((await scimClient(service, unknownToken()).request('GET', '/Users', undefined, from('198.51.100.31'))).status).toBe(401); // another address has its own allowance
  });

  it('still limits a valid token by its own bucket before validating it (SPEC 5.2 rule 5)', async () => {
    const tenant = await scimTenant(service);
    const { burst } = DEFAULT_SCIM_RATE_LIMITS.perToken;
    const statuses: number[] = [];
    for (let call = 0; call <= burst; call++) statuses.push((await tenant.scim.request('GET', '/ServiceProviderConfig', undefined, from('198.51.100.32'))).status);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
  });
});
