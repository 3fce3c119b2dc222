// SCIM token rotation with an overlap, against the real SCIM routes: the replaced token provisions
// on until the overlap runs out or an administrator ends it; turning SCIM off stops both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { scimClient, scimTenant } from '../scim/scim-client.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitUntil } from '../webhooks/helpers.ts';

describe('SCIM token rotation with an overlap', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.stop());

  const call = async (tenant: { cookie: string }, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${service.url}/api/employer/sso/scim-token${path}`, {
      method,
      headers: { ...service.sessionHeaders(tenant.cookie), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  it('keeps the old token provisioning during the overlap (1 h by default) and stops it when ended early', async () => {
    const tenant = await scimTenant(service);
    const rotated = await call(tenant, 'POST', '/rotate');
    expect(rotated.status).toBe(200);
    expect(rotated.body.scimBearerToken).toMatch(/^scim_/);
    const validUntil = Date.parse(rotated.body.previousTokenValidUntil);
    expect(validUntil - Date.now()).toBeGreaterThan(3500_000);
    expect(validUntil - Date.now()).toBeLessThanOrEqual(3600_000);

    const fresh = scimClient(service, rotated.body.scimBearerToken);
    const created = await tenant.scim.request('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `old-${Date.now()}@example.com` });
    expect(created.status).toBe(201);
    expect((await fresh.request('GET', `/Users/${created.body.id}`)).status).toBe(200);

    const ended = await call(tenant, 'POST', '/end-overlap');
    expect(ended.body).toMatchObject({ scimEnabled: true, tokenExists: true, previousTokenValidUntil: null });
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(401);
    expect((await fresh.request('GET', '/Users')).status).toBe(200);

    const actions = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ action: z.string() }))`
      SELECT action FROM audit_log WHERE employer_id = ${tenant.employerId} AND action LIKE 'sso.scim_token.%' ORDER BY global_position`);
    expect(actions).toEqual(['sso.scim_token.overlap_start', 'sso.scim_token.overlap_end']);
  });

  it('stops the old token when the overlap runs out, with no event to announce it', async () => {
    const tenant = await scimTenant(service);
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(200); // cached as working
    const rotated = await call(tenant, 'POST', '/rotate', { overlapSeconds: 1 });
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(200);
    await waitUntil('the old token to stop', async () => (await tenant.scim.request('GET', '/Users')).status === 401, 5000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(rotated.body.previousTokenValidUntil));
    expect((await call(tenant, 'GET', '')).body.previousTokenValidUntil).toBeNull();
    expect((await scimClient(service, rotated.body.scimBearerToken).request('GET', '/Users')).status).toBe(200);
  });

  it('stops at once with an overlap of 0, and when SCIM is turned off', async () => {
    const immediate = await scimTenant(service);
    await call(immediate, 'POST', '/rotate', { overlapSeconds: 0 });
    expect((await immediate.scim.request('GET', '/Users')).status).toBe(401);

    const tenant = await scimTenant(service);
    const rotated = await call(tenant, 'POST', '/rotate');
    await fetch(`${service.url}/api/employer/sso`, {
      method: 'POST', headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ scimEnabled: false }),
    });
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(401);
    expect((await scimClient(service, rotated.body.scimBearerToken).request('GET', '/Users')).status).toBe(401);
    expect((await call(tenant, 'POST', '/rotate')).body).toMatchObject({ code: 'SCIM_NOT_ENABLED' });
    expect((await call(tenant, 'POST', '/rotate', { overlapSeconds: 7 * 86400 + 1 })).status).toBe(400);
  });
});
