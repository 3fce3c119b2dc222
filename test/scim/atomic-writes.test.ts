// A SCIM write to a user is one append, all of it or nothing, at the stream revision the request is
// based on (If-Match); deactivating a user revokes, in that same append, every API key the user
// created, however recent; and the key pipeline refuses a key whose creator is deactivated.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { secondAdministrator } from '../tenants/admin-role-kit.ts';
import { apiKeyDecider, apiKeyStream } from '../../src/api-keys/api-key.ts';
import { createApiKey as createApiKeyCommand } from '../../src/api-keys/commands.ts';
import { displayPrefixOf, generateRawKey, hashRawKey } from '../../src/api-keys/raw-key.ts';
import { capabilities } from '../../src/capabilities.ts';
import { handleCommand } from '../../src/event-store/command-handler.ts';
import { userStream } from '../../src/tenants/user.ts';
import { createApiKey, keyHeaders, probeCapability, PROBE_SCOPE } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { PATCH_OP, scimTenant, USER_SCHEMA } from './scim-client.ts';

describe('SCIM writes are atomic', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ capabilities: [...capabilities, probeCapability] });
  });
  afterAll(async () => service?.stop());

  const uniqueEmail = (label: string) => `${label}.${randomUUID()}@example.test`;
  const patch = (...operations: Array<Record<string, unknown>>) => ({ schemas: [PATCH_OP], Operations: operations });
  const deactivate = patch({ op: 'replace', path: 'active', value: false });
  const probe = (rawKey: string) => fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
  const userEvents = async (employerId: string, userId: string) => (await service.ctx.eventStore.readStream(userStream(employerId, userId))).map((event) => event.type);

  it('writes nothing of a PATCH of three operations when the last one fails', async () => {
    const tenant = await scimTenant(service);
    const taken = uniqueEmail('taken');
    const other = await scimTenant(service);
    expect((await other.scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: taken })).status).toBe(201);
    const { rawKey } = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    const before = await userEvents(tenant.employerId, tenant.adminUserId);

    const refused = await tenant.scim.request('PATCH', `/Users/${tenant.adminUserId}`, patch(
      { op: 'replace', path: 'name.givenName', value: 'Changed' },
      { op: 'replace', path: 'active', value: false },
      { op: 'replace', path: 'emails', value: [{ value: taken, type: 'work', primary: true }] },
    ));
    // An administrator's sign-in e-mail never changes through SCIM (src/scim/commands.ts).
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ status: '400', scimType: 'mutability' });
    expect(await userEvents(tenant.employerId, tenant.adminUserId)).toEqual(before);
    const admin = await tenant.scim.request('GET', `/Users/${tenant.adminUserId}`);
    expect(admin.body).toMatchObject({ active: true });
    // Still the name derived from the e-mail (src/scim/resources.ts): the given name was not written.
    expect(admin.body.name.givenName).not.toBe('Changed');
    expect((await probe(rawKey)).status).toBe(200);
  });

  it('of two PATCHes racing with the same ETag, exactly one is applied and the other answers 412', async () => {
    const { scim } = await scimTenant(service);
    const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: uniqueEmail('race') });
    const path = `/Users/${created.body.id}`;
    for (let round = 0; round < 5; round++) {
      const etag = (await scim.request('GET', path)).headers.get('etag')!;
      const names = [`First ${round}`, `Second ${round}`];
      const answers = await Promise.all(names.map((name) => scim.request('PATCH', path, patch({ op: 'replace', path: 'displayName', value: name }), { 'if-match': etag })));
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412]);
      const winner = answers.findIndex((answer) => answer.status === 200);
      expect(answers[1 - winner]!.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '412' });
      expect((await scim.request('GET', path)).body.displayName).toBe(names[winner]);
    }
  });

  it('checks If-Match on groups against the stream too: of two racing PATCHes with one ETag, one answers 412', async () => {
    const { scim } = await scimTenant(service);
    const created = await scim.request('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: `Race ${randomUUID()}`, members: [] });
    expect(created.status).toBe(201);
    const path = `/Groups/${created.body.id}`;
    const etag = created.headers.get('etag')!;
    const names = ['Left', 'Right'];
    const answers = await Promise.all(names.map((name) => scim.request('PATCH', path, patch({ op: 'replace', path: 'displayName', value: name }), { 'if-match': etag })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 412]);
    expect((await scim.request('GET', path)).body.displayName).toBe(names[answers.findIndex((answer) => answer.status === 200)]);
  });

  it('If-Match names the stream revision: an ETag a write moved past is 412 for PUT and DELETE too', async () => {
    const { scim } = await scimTenant(service);
    const email = uniqueEmail('etag');
    const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: email });
    const path = `/Users/${created.body.id}`;
    const etag = created.headers.get('etag')!;
    const changed = await scim.request('PATCH', path, patch({ op: 'replace', path: 'displayName', value: 'Moved' }), { 'if-match': etag });
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect((await scim.request('PUT', path, { schemas: [USER_SCHEMA], userName: email, active: false }, { 'if-match': etag })).status).toBe(412);
    expect((await scim.request('DELETE', path, undefined, { 'if-match': etag })).status).toBe(412);
    expect((await scim.request('GET', path)).body).toMatchObject({ active: true, displayName: 'Moved' });
    expect((await scim.request('DELETE', path, undefined, { 'if-match': changed.headers.get('etag')! })).status).toBe(204);
  });

  it("keeps the ETag equal to the stream revision when the user creates a key, so If-Match still applies", async () => {
    const tenant = await scimTenant(service);
    const path = `/Users/${tenant.adminUserId}`;
    const before = (await tenant.scim.request('GET', path)).headers.get('etag');
    await createApiKey(service, tenant, { scopes: [PROBE_SCOPE] });
    const after = (await tenant.scim.request('GET', path)).headers.get('etag')!;
    expect(after).not.toBe(before);
    expect((await tenant.scim.request('PATCH', path, patch({ op: 'replace', path: 'displayName', value: 'Admin' }), { 'if-match': after })).status).toBe(200);
  });

  it('revokes, in the deactivation append, a key created a moment before (no read model consulted)', async () => {
    const tenant = await scimTenant(service);
    await secondAdministrator(service, tenant);
    // Created without waiting for any read model: the api_keys row may not exist yet.
    const unhurried = { ...service.ctx, commands: { ...service.ctx.commands, waitForProjections: async () => true } };
    const context = { tenantId: tenant.employerId, actor: { type: 'user', id: tenant.adminUserId } } as const;
    const input = { name: 'moment', scopes: [PROBE_SCOPE], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: null, createdBy: tenant.adminUserId };
    const { keyId, rawKey } = await createApiKeyCommand(unhurried, context, { ...input, now: Date.now() });

    expect((await tenant.scim.request('PATCH', `/Users/${tenant.adminUserId}`, deactivate)).status).toBe(200);
    const [deactivated] = (await service.ctx.eventStore.readStream(userStream(tenant.employerId, tenant.adminUserId))).slice(-1);
    const [revoked] = (await service.ctx.eventStore.readStream(apiKeyStream(tenant.employerId, keyId))).slice(-1);
    expect(deactivated).toMatchObject({ type: 'UserDeactivated' });
    expect(revoked).toMatchObject({ type: 'ApiKeyRevoked', data: { keyId, reason: 'creator_deactivated' } });
    expect(revoked!.position.commit).toBe(deactivated!.position.commit);
    const call = await probe(rawKey);
    expect(call.status).toBe(401);
    expect(await call.json()).toMatchObject({ code: 'API_KEY_REVOKED' });

    // A deactivated user creates no key, and nothing is written.
    await expect(createApiKeyCommand(unhurried, context, { ...input, now: Date.now() })).rejects.toMatchObject({ code: 'USER_DEACTIVATED' });
  });

  it('refuses with 401 API_KEY_REVOKED a key whose creator is deactivated, even one never revoked', async () => {
    const tenant = await scimTenant(service);
    await secondAdministrator(service, tenant);
    // A key as keys were created before the creator's stream recorded them: only its own stream knows it.
    const keyId = `key_${randomUUID().replaceAll('-', '')}`;
    const rawKey = generateRawKey();
    await handleCommand(service.ctx.commands, {
      streamName: apiKeyStream(tenant.employerId, keyId),
      decider: apiKeyDecider,
      command: {
        type: 'CreateApiKey', keyId, name: 'legacy', keyHash: hashRawKey(rawKey), keyPrefix: displayPrefixOf(rawKey), scopes: [PROBE_SCOPE],
        allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: null, createdBy: tenant.adminUserId, now: new Date().toISOString(),
      },
      context: { tenantId: tenant.employerId, actor: { type: 'user', id: tenant.adminUserId } },
    });
    expect((await probe(rawKey)).status).toBe(200); // cached now, with its creator active

    expect((await tenant.scim.request('PATCH', `/Users/${tenant.adminUserId}`, deactivate)).status).toBe(200);
    expect((await service.ctx.eventStore.readStream(apiKeyStream(tenant.employerId, keyId))).map((event) => event.type)).toEqual(['ApiKeyCreated']);
    // The api-keys projection's NOTIFY drops the cached entry in every process (this one included).
    await vi.waitFor(async () => expect((await probe(rawKey)).status).toBe(401), { timeout: 5000, interval: 20 });
    expect(await (await probe(rawKey)).json()).toMatchObject({ code: 'API_KEY_REVOKED', message: expect.stringContaining('deactivated') });
  });
});
