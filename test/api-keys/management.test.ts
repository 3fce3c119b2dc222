import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/auth/principal.ts';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService } from './key-service.ts';

describe('API key management', () => {
  let service: TestService;
  let tenant: Awaited<ReturnType<TestService['createTenant']>>;
  const keysUrl = () => `${service.url}/api/employer/api-keys`;
  const send = (method: string, url: string, body?: unknown, cookie = tenant.cookie) =>
    fetch(url, {
      method,
      headers: { ...service.sessionHeaders(cookie), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    service = await startKeyService();
    tenant = await service.createTenant();
  });
  afterAll(async () => service?.stop());

  it('creates a key: 201 with the raw key once, mt_live_ and 64 lowercase hex, only its SHA-256 stored', async () => {
    const response = await send('POST', keysUrl(), { name: '  Payroll sync  ', scopes: ['cohort:write', 'cohort:write', 'export:read'], allowedIpCidrs: ['10.1.2.3/8', '2001:db8::1'] });
    expect(response.status).toBe(201);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.json() as Record<string, unknown>;
    expect(body).toMatchObject({
      id: expect.stringMatching(/^key_/),
      name: 'Payroll sync',
      rawKey: expect.stringMatching(/^mt_live_[0-9a-f]{64}$/),
      scopes: ['cohort:write', 'export:read'],
      allowedIpCidrs: ['10.0.0.0/8', '2001:db8::1/128'],
      expiresAt: null,
      createdAt: expect.any(String),
      createdBy: tenant.adminUserId,
      status: 'active',
      requestCount: 0,
      lastUsedAt: null,
    });
    const rawKey = String(body.rawKey);
    expect(body.keyPrefix).toBe(rawKey.slice(8, 16));

    const stored = await service.ctx.db.slonik.one(sql.type(z.object({ key_hash: z.string() }))`SELECT key_hash FROM api_keys WHERE id = ${String(body.id)}`);
    expect(stored.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored.key_hash).not.toContain(rawKey.slice(8));
    const events = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ data: z.string() }))`SELECT data::text AS data FROM events`);
    expect(events.some((data) => data.includes(rawKey.slice(8)))).toBe(false);

    const fetched = await (await send('GET', `${keysUrl()}/${String(body.id)}`)).json();
    expect(fetched).not.toHaveProperty('rawKey');
  });

  it('refuses unknown scopes naming them, an empty scope list, bad CIDRs, a past expiry and unknown fields', async () => {
    const unknownScopes = await send('POST', keysUrl(), { name: 'k', scopes: ['cohort:read', 'admin:all', 'root'] });
    expect(unknownScopes.status).toBe(400);
    const unknownBody = await unknownScopes.json() as { code: string; message: string };
    expect(unknownBody.code).toBe('VALIDATION_ERROR');
    expect(unknownBody.message).toContain('"admin:all"');
    expect(unknownBody.message).toContain('"root"');

    for (const body of [
      { name: 'k', scopes: [] },
      { name: '   ', scopes: ['cohort:read'] },
      { name: 'k', scopes: ['cohort:read'], allowedIpCidrs: ['10.0.0.0/33'] },
      { name: 'k', scopes: ['cohort:read'], expiresAt: new Date(Date.now() - 60_000).toISOString() },
      { name: 'k', scopes: ['cohort:read'], expiresAt: 'tomorrow' },
      { name: 'k', scopes: ['cohort:read'], ownerEmail: 'x@example.test' },
    ]) {
      const response = await send('POST', keysUrl(), body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
  });

  it('lists the keys with the available scopes, and shows one key', async () => {
    const { id } = await createApiKey(service, tenant, { scopes: ['fhir:read'], name: 'Listed' });
    const list = await (await send('GET', keysUrl())).json() as { keys: Array<{ id: string }>; availableScopes: string[] };
    expect(list.availableScopes).toEqual([...SCOPES]);
    expect(list.keys.map((key) => key.id)).toContain(id);
    const one = await send('GET', `${keysUrl()}/${id}`);
    expect(one.status).toBe(200);
    expect(await one.json()).toMatchObject({ id, name: 'Listed', scopes: ['fhir:read'], status: 'active' });
  });

  it('suspends, resumes and renames with PATCH', async () => {
    const { id } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
    const suspended = await send('PATCH', `${keysUrl()}/${id}`, { status: 'inactive' });
    expect(suspended.status).toBe(200);
    expect(await suspended.json()).toMatchObject({ status: 'inactive' });
    const resumed = await send('PATCH', `${keysUrl()}/${id}`, { status: 'active', name: 'Renamed' });
    expect(await resumed.json()).toMatchObject({ status: 'active', name: 'Renamed' });
    expect((await send('PATCH', `${keysUrl()}/${id}`, {})).status).toBe(400);
  });

  it('revokes with DELETE; a second DELETE answers 200 with the original revocation; a revoked key cannot be resumed', async () => {
    const { id } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
    const first = await send('DELETE', `${keysUrl()}/${id}`);
    expect(first.status).toBe(200);
    const firstBody = await first.json() as { status: string; revokedAt: string };
    expect(firstBody).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    const second = await send('DELETE', `${keysUrl()}/${id}`);
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ status: 'revoked', revokedAt: firstBody.revokedAt });
    const resume = await send('PATCH', `${keysUrl()}/${id}`, { status: 'active' });
    expect(resume.status).toBe(409);
    expect(await resume.json()).toMatchObject({ code: 'API_KEY_REVOKED' });
  });

  it('records an audit entry for every change', async () => {
    const { id } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
    await send('PATCH', `${keysUrl()}/${id}`, { status: 'inactive', name: 'Audited' });
    await send('PATCH', `${keysUrl()}/${id}`, { status: 'active' });
    await send('DELETE', `${keysUrl()}/${id}`);
    const actions = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ action: z.string() }))`
      SELECT action FROM audit_log WHERE target_id = ${id} AND actor_id = ${tenant.adminUserId} ORDER BY global_position`);
    expect(actions).toEqual(['api_key.created', 'api_key.renamed', 'api_key.suspended', 'api_key.resumed', 'api_key.revoked']);
  });

  it('refuses key management to an API key (403 SESSION_REQUIRED) and to a session of another role (403)', async () => {
    const { rawKey } = await createApiKey(service, tenant, { scopes: [...SCOPES] });
    for (const [method, path] of [['GET', ''], ['POST', ''], ['GET', '/key_x'], ['PATCH', '/key_x'], ['DELETE', '/key_x']] as const) {
      const withBody = method === 'POST' || method === 'PATCH';
      const response = await fetch(`${keysUrl()}${path}`, {
        method,
        headers: { ...keyHeaders(rawKey), ...(withBody ? { 'content-type': 'application/json' } : {}) },
        ...(withBody ? { body: '{}' } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(await response.json()).toMatchObject({ code: 'SESSION_REQUIRED' });
    }

    const context = { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } } as const;
    const { userId } = await registerUser(service.ctx.commands, context, {
      employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'cli',
      profile: { email: `patient-${Date.now()}@example.test`, userName: 'patient', givenName: null, familyName: null, displayName: null, externalId: null },
    });
    const patientCookie = await service.signIn(tenant.employerId, userId);
    const asPatient = await send('GET', keysUrl(), undefined, patientCookie);
    expect(asPatient.status).toBe(403);
    expect(await asPatient.json()).toMatchObject({ code: 'FORBIDDEN_ROLE' });
  });

  it('keeps employers apart: another employer\'s key id is 404 for reading, changing and revoking', async () => {
    const other = await service.createTenant();
    const { id, rawKey } = await createApiKey(service, other, { scopes: ['fhir:read'] });
    for (const [method, body] of [['GET', undefined], ['PATCH', { status: 'inactive' }], ['DELETE', undefined]] as const) {
      const response = await send(method, `${keysUrl()}/${id}`, body);
      expect(response.status, method).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
    }
    const list = await (await send('GET', keysUrl())).json() as { keys: Array<{ id: string }> };
    expect(list.keys.map((key) => key.id)).not.toContain(id);
    // the other employer's key is untouched
    const probe = await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
    expect(probe.status).toBe(403); // fhir:read only: authenticated, lacks the probe's scope
    expect(await probe.json()).toMatchObject({ code: 'INSUFFICIENT_SCOPE' });
  });

  it('documents the key routes and the order of checks in OpenAPI', async () => {
    const document = await (await fetch(`${service.url}/api/openapi`)).json() as { paths: Record<string, Record<string, { description?: string }>> };
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/api/employer/api-keys', '/api/employer/api-keys/{keyId}']));
    const description = document.paths['/api/employer/api-keys']!.post!.description!;
    expect(description.indexOf('INVALID_API_KEY')).toBeLessThan(description.indexOf('INSUFFICIENT_SCOPE'));
    expect(description).toContain('UNSUPPORTED_API_VERSION');
  });
});
