// The SCIM rate limit comes before the token check (SPEC 5.2 rule 5). The service runs with a clock
// the test moves by hand, so the buckets refill only when the test says so.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { createScimCapability } from '../../src/scim/capability.ts';
import { DEFAULT_SCIM_RATE_LIMITS } from '../../src/scim/rate-limit.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { scimClient, scimTenant } from './scim-client.ts';

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

describe('SCIM rate limit', () => {
  let service: TestService;
  let now = 0;
  beforeAll(async () => {
    const scim = createScimCapability({ clock: () => now });
    service = await startTestService({ capabilities: capabilities.map((capability) => (capability.name === 'scim' ? scim : capability)) });
  });
  afterAll(async () => service?.stop());

  it('allows a burst of 100 per employer, then answers 429 with retry-after, without slowing another employer', async () => {
    const busy = await scimTenant(service);
    const quiet = await scimTenant(service);
    const statuses: number[] = [];
    for (let i = 0; i < DEFAULT_SCIM_RATE_LIMITS.perToken.burst + 1; i++) statuses.push((await busy.scim.request('GET', '/ServiceProviderConfig')).status);
    expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
    expect(statuses.at(-1)).toBe(429);

    const limited = await busy.scim.request('GET', '/Users');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(limited.body).toEqual({ schemas: [ERROR_SCHEMA], status: '429', detail: expect.any(String) });
    expect((await quiet.scim.request('GET', '/Users')).status).toBe(200);

    // 50 requests per second refill the bucket: one second later 50 more pass, the 51st does not
    now += 1000;
    const refilled: number[] = [];
    for (let i = 0; i < DEFAULT_SCIM_RATE_LIMITS.perToken.perSecond + 1; i++) refilled.push((await busy.scim.request('GET', '/ServiceProviderConfig')).status);
    expect(refilled.filter((status) => status === 200)).toHaveLength(50);
    expect(refilled.at(-1)).toBe(429);
  });

  it('throttles a flood of bad tokens before validating them: 429, not 401, once over the limit', async () => {
    const valid = await scimTenant(service);
    const statuses: number[] = [];
    for (let i = 0; i < DEFAULT_SCIM_RATE_LIMITS.failedAuthPerAddress.burst + 5; i++) {
      // a different well-formed token each time, so the per-token bucket never fills
      statuses.push((await scimClient(service, `scim_${randomUUID().replaceAll('-', '')}${'x'.repeat(11)}`).request('GET', '/Users')).status);
    }
    expect(statuses.slice(0, DEFAULT_SCIM_RATE_LIMITS.failedAuthPerAddress.burst)).toEqual(Array(DEFAULT_SCIM_RATE_LIMITS.failedAuthPerAddress.burst).fill(401));
    expect(statuses.slice(DEFAULT_SCIM_RATE_LIMITS.failedAuthPerAddress.burst)).toEqual(Array(5).fill(429));
    const missing = await fetch(`${service.url}/api/scim/v2/Users`);
    expect(missing.status).toBe(429);
    expect(missing.headers.get('retry-after')).toBe('1');
    expect(await missing.json()).toMatchObject({ schemas: [ERROR_SCHEMA], status: '429' });
    // a valid token from the flooding address is not held back by the others' failures (issue 20, item 6)
    expect((await valid.scim.request('GET', '/Users')).status).toBe(200);
    now += 1000;
    expect((await scimClient(service, `scim_${randomUUID().replaceAll('-', '')}${'x'.repeat(11)}`).request('GET', '/Users')).status).toBe(401);
  });
});
