// The API-key pipeline through real HTTP: every error of SPEC 7.1, the order of checks, headers,
// CIDR allowlists (IPv4, IPv6, IPv4-mapped, TRUST_PROXY), expiry, telemetry and IP-rejection records.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/auth/principal.ts';
import { createApiKey, keyHeaders, PROBE_SCOPE, type ApiKeyOptions } from '../support/api-keys.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService, testClock } from './key-service.ts';

type Tenant = Awaited<ReturnType<TestService['createTenant']>>;

describe('API-key request pipeline', () => {
  const clock = testClock();
  let service: TestService;
  let tenant: Tenant;
  const probe = (headers: Record<string, string>, base = service.url) => fetch(`${base}/probe/scoped`, { headers });
  const newKey = (options: Partial<ApiKeyOptions> = {}) => createApiKey(service, tenant, { scopes: [PROBE_SCOPE], ...options });
  const metadata = async (id: string, on = service, owner = tenant) =>
    (await fetch(`${on.url}/api/employer/api-keys/${id}`, { headers: on.sessionHeaders(owner.cookie) })).json() as Promise<Record<string, unknown>>;

  beforeAll(async () => {
    service = await startKeyService({ clock });
    tenant = await service.createTenant();
  });
  afterAll(async () => service?.stop());

  it('lets a valid key through with its principal, the resolved version and rate-limit headers', async () => {
    const { rawKey, id } = await newKey();
    const response = await probe(keyHeaders(rawKey, { 'x-api-version': 'v1' }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      principal: { kind: 'apiKey', employerId: tenant.employerId, keyId: id, createdBy: tenant.adminUserId, scopes: [PROBE_SCOPE] },
      apiVersion: '2026-02-01',
    });
    expect(response.headers.get('x-api-version')).toBe('2026-02-01');
    expect(response.headers.get('ratelimit-limit')).toBe('120');
    expect(response.headers.get('ratelimit-remaining')).toBe('119');
    expect(response.headers.get('ratelimit-reset')).toBe('30'); // the test clock stands at :30 of a minute
  });

  it('INVALID_API_KEY for a malformed or unknown key; Authorization: Bearer is not a way to send a key', async () => {
    const { rawKey } = await newKey();
    for (const wrong of ['mt_live_123', rawKey.toUpperCase().replace('MT_LIVE_', 'mt_live_'), `mt_test_${rawKey.slice(8)}`, `mt_live_${'0'.repeat(64)}`]) {
      const response = await probe(keyHeaders(wrong));
      expect(response.status, wrong).toBe(401);
      const body = await response.json();
      expect(body).toEqual({ code: 'INVALID_API_KEY', message: expect.any(String), requestId: expect.any(String) });
      expect((body as { message: string }).message).not.toContain(wrong.slice(8)); // requestId is random and may hold any digits
    }
    const bearer = await probe({ authorization: `Bearer ${rawKey}`, 'x-api-version': '2026-02-01' });
    expect(bearer.status).toBe(401);
    expect(await bearer.json()).toMatchObject({ code: 'AUTHENTICATION_REQUIRED' });
  });

  it('API_KEY_REVOKED at once after DELETE in the process that handled it', async () => {
    const { rawKey, id } = await newKey();
    expect((await probe(keyHeaders(rawKey))).status).toBe(200); // now cached
    await fetch(`${service.url}/api/employer/api-keys/${id}`, { method: 'DELETE', headers: service.sessionHeaders(tenant.cookie) });
    const response = await probe(keyHeaders(rawKey));
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'API_KEY_REVOKED' });
  });

  it('API_KEY_INACTIVE while suspended, accepted again once resumed', async () => {
    const { rawKey, id } = await newKey();
    expect((await probe(keyHeaders(rawKey))).status).toBe(200);
    const patch = (status: string) => fetch(`${service.url}/api/employer/api-keys/${id}`, {
      method: 'PATCH', headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ status }),
    });
    await patch('inactive');
    const suspended = await probe(keyHeaders(rawKey));
    expect(suspended.status).toBe(401);
    expect(await suspended.json()).toMatchObject({ code: 'API_KEY_INACTIVE' });
    await patch('active');
    expect((await probe(keyHeaders(rawKey))).status).toBe(200);
  });

  it('API_KEY_EXPIRED from the instant expiresAt on, not a millisecond before', async () => {
    const start = clock.now();
    const expiresAt = start + 3_600_000;
    const { rawKey, id } = await newKey({ expiresAt: new Date(expiresAt).toISOString() });
    try {
      clock.set(expiresAt - 1);
      expect((await probe(keyHeaders(rawKey))).status).toBe(200);
      expect(await metadata(id)).toMatchObject({ status: 'active' });
      clock.set(expiresAt);
      const expired = await probe(keyHeaders(rawKey));
      expect(expired.status).toBe(401);
      expect(await expired.json()).toMatchObject({ code: 'API_KEY_EXPIRED' });
      expect(await metadata(id)).toMatchObject({ status: 'expired' });
    } finally {
      clock.set(start);
    }
  });

  it('reports the permanent state first: a revoked key that is also suspended and expired says revoked', async () => {
    const start = clock.now();
    const { rawKey, id } = await newKey({ expiresAt: new Date(start + 60_000).toISOString() });
    const url = `${service.url}/api/employer/api-keys/${id}`;
    await fetch(url, { method: 'PATCH', headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: '{"status":"inactive"}' });
    try {
      clock.set(start + 60_000);
      expect(await (await probe(keyHeaders(rawKey))).json()).toMatchObject({ code: 'API_KEY_EXPIRED' });
      await fetch(url, { method: 'DELETE', headers: service.sessionHeaders(tenant.cookie) });
      expect(await (await probe(keyHeaders(rawKey))).json()).toMatchObject({ code: 'API_KEY_REVOKED' });
    } finally {
      clock.set(start);
    }
  });

  it('API_KEY_IP_NOT_ALLOWED outside the allowlist, each rejection counted for the alerts job after a flush', async () => {
    const { rawKey, id } = await newKey({ allowedIpCidrs: ['10.0.0.0/8', '2001:db8::/32'] });
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await probe(keyHeaders(rawKey));
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'API_KEY_IP_NOT_ALLOWED' });
    }
    await service.ctx.auth.apiKeys.flush();
    const rows = await service.ctx.db.slonik.any(sql.type(z.object({ employer_id: z.string(), ip: z.string(), rejections: z.number() }))`
      SELECT employer_id, ip, rejections FROM api_key_ip_rejections WHERE key_id = ${id}`);
    expect(rows).toEqual([{ employer_id: tenant.employerId, ip: '127.0.0.1', rejections: 3 }]);
  });

  it('INSUFFICIENT_SCOPE with requiredScopes and keyScopes', async () => {
    const { rawKey } = await newKey({ scopes: ['fhir:read', 'cohort:read'] });
    const response = await probe(keyHeaders(rawKey));
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      code: 'INSUFFICIENT_SCOPE', message: expect.any(String), requestId: expect.any(String),
      requiredScopes: [PROBE_SCOPE], keyScopes: ['fhir:read', 'cohort:read'],
    });
  });

  it('UNSUPPORTED_API_VERSION for a missing or unknown version, listing the supported ones', async () => {
    const { rawKey } = await newKey();
    for (const headers of [{ 'x-api-key': rawKey }, keyHeaders(rawKey, { 'x-api-version': '2025-01-01' }), keyHeaders(rawKey, { 'x-api-version': 'v2' })]) {
      const response = await probe(headers);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'UNSUPPORTED_API_VERSION', supportedVersions: ['2026-02-01', 'v1'] });
    }
  });

  it('RATE_LIMITED past the key\'s limit per minute, with retry-after and RateLimit headers', async () => {
    const { rawKey } = await newKey({ rateLimitPerMinute: 3 });
    const remaining: Array<string | null> = [];
    for (let call = 0; call < 3; call++) {
      const response = await probe(keyHeaders(rawKey));
      expect(response.status).toBe(200);
      remaining.push(response.headers.get('ratelimit-remaining'));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await probe(keyHeaders(rawKey));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('30');
    expect(limited.headers.get('ratelimit-limit')).toBe('3');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED' });

    const start = clock.now();
    try {
      clock.set(start + 60_000); // the next window
      expect((await probe(keyHeaders(rawKey))).status).toBe(200);
    } finally {
      clock.set(start);
    }
  });

  it('lets browser sessions call dual-mode routes without a version header, with their role\'s scopes', async () => {
    const response = await probe({ cookie: tenant.cookie });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ principal: { kind: 'session', userId: tenant.adminUserId, scopes: [...SCOPES] }, apiVersion: '2026-02-01' });
  });

  it('keeps usage telemetry in memory and shows it after a flush', async () => {
    const { rawKey, id } = await newKey();
    for (let call = 0; call < 4; call++) expect((await probe(keyHeaders(rawKey))).status).toBe(200);
    await probe(keyHeaders(rawKey, { 'x-api-version': 'v9' })); // refused: not counted
    await service.ctx.auth.apiKeys.flush();
    expect(await metadata(id)).toMatchObject({ requestCount: 4, lastUsedIp: '127.0.0.1', lastUsedAt: new Date(clock.now()).toISOString() });
  });

  describe('client addresses', () => {
    let dualStack: TestService;
    let behindProxy: TestService;
    beforeAll(async () => {
      // API-only processes on the same database (the first service runs the projections and the worker)
      const shared = { databaseUri: service.ctx.db.connectionUri, clock, roles: ['api' as const] };
      dualStack = await startKeyService({ ...shared, env: { HOST: '::' } });
      behindProxy = await startKeyService({ ...shared, env: { TRUST_PROXY: '127.0.0.1' } });
    });
    afterAll(async () => {
      await dualStack?.stop();
      await behindProxy?.stop();
    });

    it('matches IPv4-mapped socket addresses of a dual-stack listener against IPv4 ranges, and IPv6 ones against IPv6 ranges', async () => {
      const ipv4Range = await newKey({ allowedIpCidrs: ['127.0.0.0/8'] });
      const ipv6Only = await newKey({ allowedIpCidrs: ['::1'] });
      const ipv6Url = `http://[::1]:${new URL(dualStack.url).port}`;
      // connecting to 127.0.0.1 on a listener bound to :: gives the socket address ::ffff:127.0.0.1
      expect((await probe(keyHeaders(ipv4Range.rawKey), dualStack.url)).status).toBe(200);
      expect((await probe(keyHeaders(ipv6Only.rawKey), ipv6Url)).status).toBe(200);
      const wrongFamily = await probe(keyHeaders(ipv6Only.rawKey), dualStack.url);
      expect(wrongFamily.status).toBe(403);
      expect(await wrongFamily.json()).toMatchObject({ code: 'API_KEY_IP_NOT_ALLOWED' });
      expect((await probe(keyHeaders(ipv4Range.rawKey), ipv6Url)).status).toBe(403);
      await dualStack.ctx.auth.apiKeys.flush();
      expect(await metadata(ipv4Range.id)).toMatchObject({ lastUsedIp: '127.0.0.1' });
      expect(await metadata(ipv6Only.id)).toMatchObject({ lastUsedIp: '::1' });
    });

    it('takes the client address from X-Forwarded-For only when TRUST_PROXY names the proxy', async () => {
      const { rawKey } = await newKey({ allowedIpCidrs: ['203.0.113.0/24', '2001:db8::/32'] });
      for (const forwarded of ['203.0.113.7', '::ffff:203.0.113.8', '2001:db8::7']) {
        expect((await probe(keyHeaders(rawKey, { 'x-forwarded-for': forwarded }), behindProxy.url)).status, forwarded).toBe(200);
      }
      expect((await probe(keyHeaders(rawKey, { 'x-forwarded-for': '198.51.100.1' }), behindProxy.url)).status).toBe(403);
      // TRUST_PROXY off: the header is ignored and the socket address 127.0.0.1 is outside the allowlist
      const ignored = await probe(keyHeaders(rawKey, { 'x-forwarded-for': '203.0.113.7' }));
      expect(ignored.status).toBe(403);
      expect(await ignored.json()).toMatchObject({ code: 'API_KEY_IP_NOT_ALLOWED' });
    });

    it('throttles an address that keeps presenting invalid keys until the window ends, its invalid keys only', async () => {
      const { rawKey } = await newKey();
      const from = (ip: string, key: string) => probe(keyHeaders(key, { 'x-forwarded-for': ip }), behindProxy.url);
      for (let attempt = 0; attempt < 20; attempt++) expect((await from('198.51.100.66', `mt_live_${attempt}`)).status).toBe(401);
      const throttled = await from('198.51.100.66', 'mt_live_nope');
      expect(throttled.status).toBe(429);
      expect(throttled.headers.get('retry-after')).toBe('30');
      expect(await throttled.json()).toMatchObject({ code: 'RATE_LIMITED' });
      expect((await from('198.51.100.66', rawKey)).status).toBe(200); // a key that exists is never held back by others' failures
      expect((await from('198.51.100.67', 'mt_live_nope')).status).toBe(401); // other addresses are not affected
    });
  });
});
