// The SCIM service's rules beyond one IdP's sequence: discovery, the bearer token and its rotation,
// errors in the SCIM envelope, paging and attribute selection, uniqueness of e-mails across
// employers, tenant isolation, what deactivation does to keys and sessions, and the audit trail.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { secondAdministrator } from '../tenants/admin-role-kit.ts';
import { capabilities } from '../../src/capabilities.ts';
import { createApiKey, keyHeaders, probeCapability } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableScim, filterPath, GROUP_SCHEMA, PATCH_OP, scimClient, scimTenant, USER_SCHEMA } from './scim-client.ts';

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

describe('SCIM service', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ capabilities: [...capabilities, probeCapability] });
  });
  afterAll(async () => service?.stop());

  const user = (email: string, extra: Record<string, unknown> = {}) => ({ schemas: [USER_SCHEMA], userName: email, emails: [{ value: email, type: 'work', primary: true }], ...extra });
  const uniqueEmail = (label: string) => `${label}.${randomUUID()}@example.test`;

  it('describes itself: ServiceProviderConfig, ResourceTypes and Schemas', async () => {
    const { scim } = await scimTenant(service);
    const config = await scim.request('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(config.body).toMatchObject({ patch: { supported: true }, bulk: { supported: false }, filter: { supported: true, maxResults: 200 }, etag: { supported: true } });
    const types = await scim.request('GET', '/ResourceTypes');
    expect(types.body.Resources.map((type: { id: string }) => type.id)).toEqual(['User', 'Group']);
    expect((await scim.request('GET', '/ResourceTypes/User')).body.endpoint).toBe('/Users');
    const schemas = await scim.request('GET', '/Schemas');
    expect(schemas.body.totalResults).toBe(3);
    const userSchema = await scim.request('GET', `/Schemas/${USER_SCHEMA}`);
    expect(userSchema.body.attributes.map((attribute: { name: string }) => attribute.name)).toContain('userName');
  });

  it('refuses a missing or unknown token with 401 in the SCIM envelope, and unknown paths with 404', async () => {
    const missing = await fetch(`${service.url}/api/scim/v2/Users`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(await missing.json()).toEqual({ schemas: [ERROR_SCHEMA], status: '401', detail: expect.any(String) });
    const unknown = await scimClient(service, `scim_${'A'.repeat(43)}`).request('GET', '/Users');
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '401' });
    const { scim } = await scimTenant(service);
    const nowhere = await scim.request('GET', '/Nothing');
    expect(nowhere.status).toBe(404);
    expect(nowhere.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '404' });
  });

  it('answers bad requests with the RFC 7644 scimType', async () => {
    const { scim } = await scimTenant(service);
    const badFilter = await scim.request('GET', filterPath('Users', 'userName eq'));
    expect(badFilter.status).toBe(400);
    expect(badFilter.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '400', scimType: 'invalidFilter' });
    const malformed = await fetch(`${service.url}/api/scim/v2/Users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${scim.token}`, 'content-type': 'application/scim+json' },
      body: '{"userName": ',
    });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ schemas: [ERROR_SCHEMA], status: '400', scimType: 'invalidSyntax' });
    const noUserName = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], emails: [{ value: uniqueEmail('x') }] });
    expect(noUserName.body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    const badPaging = await scim.request('GET', '/Users?count=ten');
    expect(badPaging.body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    const readOnly = await scim.request('PATCH', `/Users/${(await scim.request('POST', '/Users', user(uniqueEmail('ro')))).body.id}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', path: 'id', value: 'other' }],
    });
    expect(readOnly.body).toMatchObject({ status: '400', scimType: 'mutability' });
  });

  it('answers the filters of issue 20 that were 500s with 400 invalidFilter, and attribute lists naming a prototype member with 400 invalidValue before creating anything', async () => {
    const { scim } = await scimTenant(service);
    for (const [resource, filter] of [['Users', 'constructor pr'], ['Users', '__proto__ pr'], ['Groups', 'constructor pr'], ['Users', 'meta.lastModified gt "0000-01-01T00:00:00Z"'], ['Groups', 'meta.created lt "2024-01-01T00:00:00+16:00"']] as const) {
      const response = await scim.request('GET', filterPath(resource, filter));
      expect(response.status, filter).toBe(400);
      expect(response.body, filter).toMatchObject({ schemas: [ERROR_SCHEMA], status: '400', scimType: 'invalidFilter' });
    }
    const email = uniqueEmail('selected');
    const selected = await scim.request('POST', '/Users?attributes=userName,constructor', user(email));
    expect(selected.body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    expect((await scim.request('GET', filterPath('Users', `userName eq "${email}"`))).body.totalResults).toBe(0);
    expect((await scim.request('GET', '/Users?excludedAttributes=__proto__')).body).toMatchObject({ status: '400', scimType: 'invalidValue' });
  });

  it('pages in a stable order and selects attributes', async () => {
    const { scim, adminUserId } = await scimTenant(service);
    const created: string[] = [adminUserId];
    for (let i = 0; i < 4; i++) created.push((await scim.request('POST', '/Users', user(uniqueEmail(`page${i}`), { displayName: `Page ${i}` }))).body.id);
    const seen: string[] = [];
    for (const startIndex of [1, 3, 5]) {
      const page = await scim.request('GET', `/Users?startIndex=${startIndex}&count=2`);
      expect(page.body).toMatchObject({ totalResults: 5, startIndex, itemsPerPage: startIndex === 5 ? 1 : 2 });
      seen.push(...page.body.Resources.map((resource: { id: string }) => resource.id));
    }
    // every user of the employer, the admin created with the tenant first, each exactly once
    expect(seen).toEqual(created);
    const countOnly = await scim.request('GET', '/Users?count=0');
    expect(countOnly.body).toMatchObject({ totalResults: 5, itemsPerPage: 0, Resources: [] });
    const beyond = await scim.request('GET', '/Users?startIndex=50');
    expect(beyond.body).toMatchObject({ totalResults: 5, itemsPerPage: 0, startIndex: 50 });

    const selected = await scim.request('GET', `/Users?attributes=userName&filter=${encodeURIComponent('displayName sw "Page"')}`);
    expect(selected.body.totalResults).toBe(4);
    for (const resource of selected.body.Resources) expect(Object.keys(resource).sort()).toEqual(['id', 'schemas', 'userName']);
    const excluded = await scim.request('GET', `/Users/${created[1]}?excludedAttributes=emails,meta`);
    expect(excluded.body).not.toHaveProperty('emails');
    expect(excluded.body).toHaveProperty('userName');
  });

  it('keeps e-mails unique across employers (409 uniqueness) and userName and e-mail unique within one', async () => {
    const a = await scimTenant(service);
    const b = await scimTenant(service);
    const email = uniqueEmail('taken');
    expect((await a.scim.request('POST', '/Users', user(email))).status).toBe(201);

    const elsewhere = await b.scim.request('POST', '/Users', user(email));
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body).toEqual({ schemas: [ERROR_SCHEMA], status: '409', scimType: 'uniqueness', detail: 'This e-mail address cannot be used.' });

    // The same answer when this employer holds the address: no answer tells where an address is held.
    const sameEmail = await a.scim.request('POST', '/Users', user(email, { userName: `other-${randomUUID()}` }));
    expect(sameEmail.body).toEqual(elsewhere.body);
    const sameUserName = await a.scim.request('POST', '/Users', user(uniqueEmail('other'), { userName: email.toUpperCase() }));
    expect(sameUserName.body).toMatchObject({ status: '409', scimType: 'uniqueness' });

    // changing an e-mail to one another employer holds is refused too
    const other = (await b.scim.request('POST', '/Users', user(uniqueEmail('b')))).body.id;
    const steal = await b.scim.request('PATCH', `/Users/${other}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails[type eq "work"].value', value: email }] });
    expect(steal.body).toMatchObject({ status: '409', scimType: 'uniqueness' });
  });

  it("keeps employers apart: another employer's ids are 404 and its users cannot be members", async () => {
    const a = await scimTenant(service);
    const b = await scimTenant(service);
    const userOfA = (await a.scim.request('POST', '/Users', user(uniqueEmail('iso')))).body.id;
    const groupOfA = (await a.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'A team', members: [{ value: userOfA }] })).body.id;

    expect((await b.scim.request('GET', `/Users/${userOfA}`)).status).toBe(404);
    expect((await b.scim.request('PUT', `/Users/${userOfA}`, user(uniqueEmail('iso')))).status).toBe(404);
    expect((await b.scim.request('PATCH', `/Users/${userOfA}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] })).status).toBe(404);
    expect((await b.scim.request('DELETE', `/Users/${userOfA}`)).status).toBe(404);
    expect((await b.scim.request('GET', `/Groups/${groupOfA}`)).status).toBe(404);
    expect((await b.scim.request('PATCH', `/Groups/${groupOfA}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'x' }] })).status).toBe(404);
    expect((await b.scim.request('DELETE', `/Groups/${groupOfA}`)).status).toBe(404);
    expect((await b.scim.request('GET', filterPath('Users', `id eq "${userOfA}"`))).body.totalResults).toBe(0);
    expect((await b.scim.request('GET', '/Groups')).body.totalResults).toBe(0);

    const foreignMember = await b.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'B team', members: [{ value: userOfA }] });
    expect(foreignMember.status).toBe(400);
    expect(foreignMember.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '400', scimType: 'invalidValue' });
    const groupOfB = (await b.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'B team' })).body.id;
    const addForeign = await b.scim.request('PATCH', `/Groups/${groupOfB}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: userOfA }] }] });
    expect(addForeign.body).toMatchObject({ status: '400', scimType: 'invalidValue' });

    // A's records are untouched
    expect((await a.scim.request('GET', `/Users/${userOfA}`)).body.active).toBe(true);
    expect((await a.scim.request('GET', `/Groups/${groupOfA}`)).body).toMatchObject({ displayName: 'A team', members: [{ value: userOfA }] });
  });

  it('rotating the token keeps the old one working until its overlap is ended; disabling SCIM makes the new one fail', async () => {
    const tenant = await scimTenant(service);
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(200);
    const rotated = await enableScim(service, tenant, { rotateScimToken: true });
    expect(rotated).not.toBe(tenant.token);
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(200);
    await fetch(`${service.url}/api/employer/sso/scim-token/end-overlap`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    expect((await tenant.scim.request('GET', '/Users')).status).toBe(401);
    const fresh = scimClient(service, rotated);
    expect((await fresh.request('GET', '/Users')).status).toBe(200);
    const disabled = await fetch(`${service.url}/api/employer/sso`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ scimEnabled: false }),
    });
    expect(disabled.status).toBe(200);
    expect((await fresh.request('GET', '/Users')).status).toBe(401);
  });

  it("deactivation revokes the user's API keys and ends its sessions (the admin is a SCIM user too, not the last one)", async () => {
    const tenant = await scimTenant(service);
    await secondAdministrator(service, tenant);
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['webhook:manage'] });
    expect((await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) })).status).toBe(200);
    expect((await fetch(`${service.url}/api/auth/session`, { headers: { cookie: tenant.cookie } })).status).toBe(200);

    const admin = await tenant.scim.request('GET', filterPath('Users', `id eq "${tenant.adminUserId}"`));
    expect(admin.body.Resources[0]).toMatchObject({ id: tenant.adminUserId, active: true });
    const deactivated = await tenant.scim.request('PATCH', `/Users/${tenant.adminUserId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(deactivated.body.active).toBe(false);

    const keyCall = await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
    expect(keyCall.status).toBe(401);
    expect(await keyCall.json()).toMatchObject({ code: 'API_KEY_REVOKED' });
    expect((await fetch(`${service.url}/api/auth/session`, { headers: { cookie: tenant.cookie } })).status).toBe(401);
  });

  it('honours If-Match: a write on a stale version is 412', async () => {
    const { scim } = await scimTenant(service);
    const created = await scim.request('POST', '/Users', user(uniqueEmail('etag')));
    const etag = created.headers.get('etag')!;
    const first = await scim.request('PATCH', `/Users/${created.body.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'One' }] }, { 'if-match': etag });
    expect(first.status).toBe(200);
    const stale = await scim.request('PATCH', `/Users/${created.body.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Two' }] }, { 'if-match': etag });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ schemas: [ERROR_SCHEMA], status: '412' });
  });

  it('records the SCIM audit actions with the token as actor', async () => {
    const { scim, employerId } = await scimTenant(service);
    const userId = (await scim.request('POST', '/Users', user(uniqueEmail('audit')))).body.id;
    await scim.request('PATCH', `/Users/${userId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Audited' }] });
    const groupId = (await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Audit' })).body.id;
    await scim.request('PATCH', `/Groups/${groupId}`, { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'members', value: [{ value: userId }] }] });
    await scim.request('DELETE', `/Groups/${groupId}`);
    await scim.request('DELETE', `/Users/${userId}`);
    // commands wait for the audit projection, so the records are there when the responses are
    const actions: { action: string; actor_type: string; target_id: string }[] = (
      await service.ctx.db.pg.query('SELECT action, actor_type, target_id FROM audit_log WHERE employer_id = $1 ORDER BY global_position', [employerId])
    ).rows;
    const scimActions = actions.filter((row) => row.action.startsWith('scim.'));
    expect(scimActions.map((row) => [row.action, row.target_id])).toEqual([
      ['scim.user.provision', userId],
      ['scim.user.update', userId],
      ['scim.group.create', groupId],
      ['scim.group.update', groupId],
      ['scim.group.delete', groupId],
      ['scim.user.deactivate', userId],
    ]);
    expect(new Set(scimActions.map((row) => row.actor_type))).toEqual(new Set(['scimToken']));
  });
});
