// Two server processes on one database: the IdP removing a user from a mapped group in one process
// takes the administrator role away in the other within a second: the user's session there is
// refused, and so is the API key the user created (cached by that process before).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders, PROBE_SCOPE } from '../support/api-keys.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService } from '../api-keys/key-service.ts';
import { GROUP_SCHEMA, scimTenant } from '../scim/scim-client.ts';
import { memberPatch, putMapping, scimUser, sessionRole } from './admin-role-kit.ts';
import { eventually } from '../support/eventually.ts';

describe('the administrator role across two server processes', () => {
  let first: TestService;
  let second: TestService;

  beforeAll(async () => {
    first = await startKeyService();
    // an API-only process; the first runs the projections and the worker
    second = await startKeyService({ databaseUri: first.ctx.db.connectionUri, roles: ['api'] });
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  it('removal from the mapped group ends the session and revokes the key in the other process within 1 second', async () => {
    const tenant = await scimTenant(first);
    const carol = await scimUser(tenant.scim, 'carol');
    const group = await tenant.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'IT admins', members: [{ value: carol }] });
    expect((await putMapping(first, tenant.cookie, { scimGroups: ['IT admins'], samlAttribute: null, samlValues: [] })).status).toBe(200);
    const cookie = await first.signIn(tenant.employerId, carol);
    expect(await eventually(async () => (await sessionRole(second, cookie)) === 'EMPLOYER_ADMIN', 1000)).toBe(true);
    const { rawKey } = await createApiKey(second, { cookie }, { scopes: [PROBE_SCOPE] });
    expect((await fetch(`${second.url}/probe/scoped`, { headers: keyHeaders(rawKey) })).status).toBe(200); // cached by the second process

    expect((await tenant.scim.request('PATCH', `/Groups/${group.body.id}`, memberPatch('remove', carol))).status).toBe(200);
    const keyRefused = async () => {
      const response = await fetch(`${second.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
      return response.status === 401 && ((await response.json()) as { code: string }).code === 'API_KEY_REVOKED';
    };
    expect(await eventually(async () => (await sessionRole(second, cookie)) === 401 && (await keyRefused()), 1000)).toBe(true);
  });
});
