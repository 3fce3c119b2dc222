// Rolling a key (a new key with the same settings, the old one working for an overlap) and changing
// a key's settings in place, through the real routes and the request pipeline, on a test clock.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders, PROBE_SCOPE } from '../support/api-keys.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService, testClock } from './key-service.ts';

describe('API key roll and in-place changes', () => {
  const clock = testClock();
  let service: TestService;
  let tenant: Awaited<ReturnType<TestService['createTenant']>>;
  const keyUrl = (id: string, tail = '') => `${service.url}/api/employer/api-keys/${id}${tail}`;
  const send = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(url, {
      method,
      headers: { ...service.sessionHeaders(tenant.cookie), ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const codeOf = async (rawKey: string) => {
    const response = await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
    return response.status === 200 ? 'OK' : ((await response.json()) as { code: string }).code;
  };

  beforeAll(async () => {
    service = await startKeyService({ clock });
    tenant = await service.createTenant();
  });
  afterAll(async () => service?.stop());

  it('rolls a key: the new key has the same settings; the old one works until the overlap ends, then API_KEY_REVOKED', async () => {
    const start = clock.now();
    try {
      const old = await createApiKey(service, tenant, { name: 'Payroll', scopes: [PROBE_SCOPE, 'fhir:read'], allowedIpCidrs: ['127.0.0.0/8'], rateLimitPerMinute: 50 });
      expect(await codeOf(old.rawKey)).toBe('OK'); // cached before the roll
      const rolled = await send('POST', keyUrl(old.id, '/roll'), { overlapSeconds: 3600 });
      expect(rolled.status).toBe(201);
      expect(rolled.body).toMatchObject({
        name: 'Payroll', scopes: [PROBE_SCOPE, 'fhir:read'], allowedIpCidrs: ['127.0.0.0/8'], rateLimitPerMinute: 50, status: 'active', createdBy: tenant.adminUserId,
      });
      expect(rolled.body.rawKey).toMatch(/^mt_live_[0-9a-f]{64}$/);
      expect(rolled.body.id).not.toBe(old.id);
      const revokesAt = start + 3600_000;
      expect((await send('GET', keyUrl(old.id))).body).toMatchObject({ status: 'active', rolledInto: rolled.body.id, revokesAt: new Date(revokesAt).toISOString() });

      expect(await codeOf(rolled.body.rawKey)).toBe('OK');
      expect(await codeOf(old.rawKey)).toBe('OK');
      clock.set(revokesAt - 1);
      expect(await codeOf(old.rawKey)).toBe('OK');
      clock.set(revokesAt);
      expect(await codeOf(old.rawKey)).toBe('API_KEY_REVOKED');
      expect(await codeOf(rolled.body.rawKey)).toBe('OK');
      expect((await send('GET', keyUrl(old.id))).body).toMatchObject({ status: 'revoked', revokedAt: new Date(revokesAt).toISOString(), revokesAt: null });

      // Rolled once: roll its successor.
      expect((await send('POST', keyUrl(old.id, '/roll'))).body).toMatchObject({ code: 'API_KEY_ROLLED', successorKeyId: rolled.body.id });
    } finally {
      clock.set(start);
    }
  });

  it('revokes at once with an overlap of 0, and DELETE ends an overlap early', async () => {
    const immediate = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    expect((await send('POST', keyUrl(immediate.id, '/roll'), { overlapSeconds: 0 })).status).toBe(201);
    expect(await codeOf(immediate.rawKey)).toBe('API_KEY_REVOKED');

    const overlapping = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    const rolled = await send('POST', keyUrl(overlapping.id, '/roll'));
    expect((await send('GET', keyUrl(overlapping.id))).body.revokesAt).toBe(new Date(clock.now() + 24 * 3600_000).toISOString());
    expect(await codeOf(overlapping.rawKey)).toBe('OK');
    expect((await send('DELETE', keyUrl(overlapping.id))).status).toBe(200);
    expect(await codeOf(overlapping.rawKey)).toBe('API_KEY_REVOKED');
    expect(await codeOf(rolled.body.rawKey)).toBe('OK');
  });

  it('is idempotent with Idempotency-Key: a repeated roll answers the same new key and creates no other', async () => {
    const key = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    const headers = { 'idempotency-key': `roll-${key.id}` };
    const first = await send('POST', keyUrl(key.id, '/roll'), { overlapSeconds: 60 }, headers);
    const second = await send('POST', keyUrl(key.id, '/roll'), { overlapSeconds: 60 }, headers);
    expect(first.status).toBe(201);
    expect(second).toEqual(first);
    const successors = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ rolled_into: z.string() }))`
      SELECT rolled_into FROM api_keys WHERE id = ${key.id}`);
    expect(successors).toEqual([first.body.id]);
  });

  it('refuses to roll a revoked or expired key, and an overlap beyond 7 days', async () => {
    const revoked = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    await send('DELETE', keyUrl(revoked.id));
    expect((await send('POST', keyUrl(revoked.id, '/roll'))).body).toMatchObject({ code: 'API_KEY_REVOKED' });
    const start = clock.now();
    try {
      const expiring = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE], expiresAt: new Date(start + 60_000).toISOString() });
      clock.set(start + 60_000);
      expect((await send('POST', keyUrl(expiring.id, '/roll'))).body).toMatchObject({ code: 'API_KEY_EXPIRED' });
    } finally {
      clock.set(start);
    }
    const key = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    expect((await send('POST', keyUrl(key.id, '/roll'), { overlapSeconds: 7 * 86400 + 1 })).status).toBe(400);
    expect((await send('POST', `${service.url}/api/employer/api-keys/key_nope/roll`)).status).toBe(404);
  });

  it('changes scopes, CIDR allowlist, expiry and rate limit in place with PATCH, each effective at once', async () => {
    const key = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE, 'fhir:read'] });
    expect(await codeOf(key.rawKey)).toBe('OK');

    const scoped = await send('PATCH', keyUrl(key.id), { scopes: ['fhir:read'] });
    expect(scoped.body).toMatchObject({ scopes: ['fhir:read'] });
    expect(await codeOf(key.rawKey)).toBe('INSUFFICIENT_SCOPE');
    await send('PATCH', keyUrl(key.id), { scopes: [PROBE_SCOPE] });
    expect(await codeOf(key.rawKey)).toBe('OK');

    expect((await send('PATCH', keyUrl(key.id), { allowedIpCidrs: ['203.0.113.0/24'] })).body).toMatchObject({ allowedIpCidrs: ['203.0.113.0/24'] });
    expect(await codeOf(key.rawKey)).toBe('API_KEY_IP_NOT_ALLOWED');
    expect((await send('PATCH', keyUrl(key.id), { allowedIpCidrs: [] })).body).toMatchObject({ allowedIpCidrs: [] });

    const expiresAt = new Date(clock.now() + 60_000).toISOString();
    expect((await send('PATCH', keyUrl(key.id), { expiresAt, rateLimitPerMinute: 7 })).body).toMatchObject({ expiresAt, rateLimitPerMinute: 7 });
    const limited = await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(key.rawKey) });
    expect(limited.headers.get('ratelimit-limit')).toBe('7');
    expect((await send('PATCH', keyUrl(key.id), { expiresAt: null, rateLimitPerMinute: null })).body).toMatchObject({ expiresAt: null, rateLimitPerMinute: null });

    expect((await send('PATCH', keyUrl(key.id), { expiresAt: new Date(clock.now() - 1000).toISOString() })).status).toBe(400);
    expect((await send('PATCH', keyUrl(key.id), { scopes: ['no:such'] })).status).toBe(400);
    expect((await send('PATCH', keyUrl(key.id), { allowedIpCidrs: ['10.0.0.0/99'] })).status).toBe(400);

    const actions = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ action: z.string() }))`
      SELECT action FROM audit_log WHERE target_id = ${key.id} ORDER BY global_position`);
    expect(actions.filter((action) => action === 'api_key.updated')).toHaveLength(6);
  });

  it('audits a roll on the old key', async () => {
    const key = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    const rolled = await send('POST', keyUrl(key.id, '/roll'), { overlapSeconds: 60 });
    const details = await service.ctx.db.slonik.maybeOneFirst(sql.type(z.object({ details: z.any() }))`
      SELECT details FROM audit_log WHERE target_id = ${key.id} AND action = 'api_key.rolled'`);
    expect(details).toMatchObject({ successorKeyId: rolled.body.id });
  });
});
