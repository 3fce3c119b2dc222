// The requests Okta sends when it provisions users and pushes groups (its SCIM 2.0 test suite and
// "Push Groups"): look up by userName, create, read, update with PUT, deactivate with a path-less
// PATCH; create a group, rename it with a value carrying the read-only id, add and remove members.
// Okta sends Content-Type: application/json.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { createEmployer } from '../../src/tenants/commands.ts';
import { enableScim, filterPath, GROUP_SCHEMA, PATCH_OP, scimClient, scimTenant, USER_SCHEMA, type ScimClient } from './scim-client.ts';

describe('Okta provisioning sequence', () => {
  let service: TestService;
  let scim: ScimClient;
  beforeAll(async () => {
    service = await startTestService();
    ({ scim } = await scimTenant(service, 'application/json'));
  });
  afterAll(async () => service?.stop());

  const oktaUser = (login: string, givenName: string) => ({
    schemas: [USER_SCHEMA],
    userName: login,
    name: { givenName, familyName: 'Okta' },
    emails: [{ primary: true, value: login, type: 'work' }],
    displayName: `${givenName} Okta`,
    locale: 'en-US',
    externalId: `00u${randomUUID().replaceAll('-', '').slice(0, 17)}`,
    groups: [],
    password: 'not-kept-1!A',
    active: true,
  });

  it('looks a user up, creates, reads, updates with PUT and deactivates with PATCH', async () => {
    const login = `okta.${randomUUID()}@example.test`;
    const lookup = await scim.request('GET', filterPath('Users', `userName eq "${login}"`, '&startIndex=1&count=100'));
    expect(lookup.status).toBe(200);
    expect(lookup.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(lookup.body).toEqual({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 0, itemsPerPage: 0, startIndex: 1, Resources: [] });

    const created = await scim.request('POST', '/Users', oktaUser(login, 'Ada'));
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.headers.get('location')).toBe(`${service.url}/api/scim/v2/Users/${id}`);
    expect(created.headers.get('etag')).toBe(created.body.meta.version);
    expect(created.body).toMatchObject({
      schemas: [USER_SCHEMA],
      userName: login,
      active: true,
      name: { givenName: 'Ada', familyName: 'Okta' },
      emails: [{ value: login, type: 'work', primary: true }],
      meta: { resourceType: 'User', location: `${service.url}/api/scim/v2/Users/${id}`, created: expect.any(String), lastModified: expect.any(String) },
    });
    expect(created.body).not.toHaveProperty('password');

    const read = await scim.request('GET', `/Users/${id}`);
    expect(read.status).toBe(200);
    // The POST answers with the row the projection writes, without reading it back: the same resource.
    expect(read.body).toEqual(created.body);
    expect(read.headers.get('etag')).toBe(created.headers.get('etag'));
    // userName comparison is case-insensitive
    const found = await scim.request('GET', filterPath('Users', `userName eq "${login.toUpperCase()}"`));
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0].id).toBe(id);

    const duplicate = await scim.request('POST', '/Users', oktaUser(login, 'Ada'));
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '409', scimType: 'uniqueness' });

    const replaced = await scim.request('PUT', `/Users/${id}`, { ...oktaUser(login, 'Augusta'), id, externalId: created.body.externalId });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name.givenName).toBe('Augusta');
    expect(replaced.body.displayName).toBe('Augusta Okta');
    expect(replaced.body.meta.version).not.toBe(created.body.meta.version);
    // the same PUT again changes nothing, so the version stays
    const again = await scim.request('PUT', `/Users/${id}`, { ...oktaUser(login, 'Augusta'), id, externalId: created.body.externalId });
    expect(again.body.meta.version).toBe(replaced.body.meta.version);

    const deactivated = await scim.request('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);
    // still visible, with active false, to GET and to filters
    expect((await scim.request('GET', `/Users/${id}`)).body.active).toBe(false);
    const inactive = await scim.request('GET', filterPath('Users', `userName eq "${login}" and active eq false`));
    expect(inactive.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);

    const reactivated = await scim.request('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', value: { active: true } }] });
    expect(reactivated.body.active).toBe(true);

    const missing = await scim.request('GET', `/Users/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '404' });
  });

  it('pushes a group: create, rename with the id in the value, add and remove members, delete', async () => {
    const users = await Promise.all(
      ['one', 'two', 'three'].map(async (name) => (await scim.request('POST', '/Users', oktaUser(`okta.${name}.${randomUUID()}@example.test`, name))).body.id as string),
    );
    const [one, two, three] = users as [string, string, string];

    const lookup = await scim.request('GET', filterPath('Groups', 'displayName eq "Engineering"'));
    expect(lookup.body.totalResults).toBe(0);
    const created = await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Engineering', members: [] });
    expect(created.status).toBe(201);
    const groupId = created.body.id as string;
    expect(created.body).toMatchObject({ displayName: 'Engineering', members: [], meta: { resourceType: 'Group' } });

    const renamed = await scim.request('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'replace', value: { id: groupId, displayName: 'Engineering Team' } }],
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body.displayName).toBe('Engineering Team');

    const added = await scim.request('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'add', path: 'members', value: [{ value: one, display: 'one' }, { value: two, display: 'two' }, { value: three, display: 'three' }] }],
    });
    expect(added.status).toBe(200);
    expect(added.body.members.map((member: { value: string }) => member.value)).toEqual([one, two, three]);

    const removed = await scim.request('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH_OP],
      Operations: [{ op: 'remove', path: `members[value eq "${two}"]` }],
    });
    expect(removed.status).toBe(200);
    expect(removed.body.members.map((member: { value: string }) => member.value)).toEqual([one, three]);

    const read = await scim.request('GET', `/Groups/${groupId}`);
    expect(read.body).toMatchObject({ id: groupId, displayName: 'Engineering Team' });
    expect(read.body.members).toEqual([
      { value: one, $ref: `${service.url}/api/scim/v2/Users/${one}`, display: 'one Okta' },
      { value: three, $ref: `${service.url}/api/scim/v2/Users/${three}`, display: 'three Okta' },
    ]);
    const byMember = await scim.request('GET', filterPath('Groups', `members.value eq "${three}"`));
    expect(byMember.body.Resources.map((group: { id: string }) => group.id)).toEqual([groupId]);

    const replaced = await scim.request('PUT', `/Groups/${groupId}`, { schemas: [GROUP_SCHEMA], id: groupId, displayName: 'Eng', members: [{ value: two }] });
    expect(replaced.status).toBe(200);
    expect(replaced.body.members.map((member: { value: string }) => member.value)).toEqual([two]);

    const deleted = await scim.request('DELETE', `/Groups/${groupId}`);
    expect(deleted.status).toBe(204);
    expect((await scim.request('GET', `/Groups/${groupId}`)).status).toBe(404);
    expect((await scim.request('GET', filterPath('Groups', `members.value eq "${two}"`))).body.totalResults).toBe(0);
  });
});

// Okta's "SCIM 2.0 SPEC Test" (its Runscope suite), step by step with its assertions, against a fresh
// tenant: the first user is the administrator `tenants create` made, without a name.
describe('Okta SCIM 2.0 SPEC Test on a fresh tenant', () => {
  let service: TestService;
  let scim: ScimClient;
  let adminUserId: string;
  beforeAll(async () => {
    service = await startTestService();
    ({ scim, adminUserId } = await scimTenant(service));
  });
  afterAll(async () => service?.stop());

  const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
  const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

  it('passes every required step', async () => {
    // Required Test: Test Users endpoint
    const users = await scim.request('GET', '/Users?count=1&startIndex=1');
    expect(users.status).toBe(200);
    expect(users.body.Resources).toHaveLength(1);
    expect(users.body.schemas).toContain(LIST_RESPONSE);
    for (const field of ['itemsPerPage', 'startIndex', 'totalResults']) expect(typeof users.body[field]).toBe('number');
    const first = users.body.Resources[0];
    expect(first.id).toBe(adminUserId);
    // The administrator has no name: shown with the one its e-mail gives (admin-<suffix>@example.test).
    expect(first.name.givenName).toBe('Admin');
    expect(first.name.familyName).toEqual(expect.any(String));
    expect(first.userName).toEqual(expect.any(String));
    expect(first.active).toBe(true);
    expect(first.emails[0].value).toEqual(expect.any(String));

    // Required Test: Get Users/{{id}}
    const isvUser = await scim.request('GET', `/Users/${first.id}`);
    expect(isvUser.status).toBe(200);
    expect(isvUser.body).toMatchObject({ id: first.id, name: first.name, userName: first.userName, active: true, emails: [{ value: first.emails[0].value }] });

    // Required Test: Test invalid User by username
    const invalidByName = await scim.request('GET', filterPath('Users', 'userName eq "abcdefgh@atko.com"'));
    expect(invalidByName.status).toBe(200);
    expect(invalidByName.body.schemas).toContain(LIST_RESPONSE);
    expect(invalidByName.body.totalResults).toBe(0);

    // Required Test: Test invalid User by ID
    const invalidById = await scim.request('GET', `/Users/${randomUUID()}`);
    expect(invalidById.status).toBe(404);
    expect(invalidById.body.schemas).toContain(ERROR);
    expect(invalidById.body.detail).toEqual(expect.any(String));

    // Required Test: Make sure random user doesn't exist
    const suffix = randomUUID().slice(0, 8);
    const userName = `Runscope${suffix}Fuhpfuwaw@atko.com`;
    const random = await scim.request('GET', filterPath('Users', `userName eq "${userName}"`));
    expect(random.status).toBe(200);
    expect(random.body.totalResults).toBe(0);

    // Required Test: Create Okta user with realistic values
    const realistic = {
      schemas: [USER_SCHEMA],
      userName,
      name: { givenName: `Runscope${suffix}`, familyName: 'Fuhpfuwaw' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      displayName: `Runscope${suffix} Fuhpfuwaw`,
      active: true,
    };
    const created = await scim.request('POST', '/Users', realistic);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ active: true, name: realistic.name, userName, schemas: [USER_SCHEMA] });
    expect(created.body.id).toEqual(expect.any(String));

    // Required Test: Verify that user was created
    const verified = await scim.request('GET', `/Users/${created.body.id}`);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ userName, name: realistic.name, emails: [{ value: created.body.emails[0].value }] });

    // Required Test: Expect failure when recreating user with same values
    const again = await scim.request('POST', '/Users', realistic);
    expect(again.status).toBe(409);
    expect(again.body.schemas).toContain(ERROR);

    // Required Test: Username Case Sensitivity Check
    const caps = await scim.request('GET', filterPath('Users', `userName eq "${userName.toUpperCase()}"`));
    expect(caps.status).toBe(200);
    expect(caps.body.totalResults).toBe(1);

    // Optional Test: Verify Groups endpoint
    const groups = await scim.request('GET', '/Groups?count=1&startIndex=1');
    expect(groups.status).toBe(200);
    expect(groups.body.schemas).toContain(LIST_RESPONSE);
    expect(Array.isArray(groups.body.Resources)).toBe(true);

    // Required Test: Check status 401
    const unauthorised = await scimClient(service, 'not-a-token').request('GET', '/Users?count=1&startIndex=1');
    expect(unauthorised.status).toBe(401);
    expect(unauthorised.body.schemas).toContain(ERROR);
  });

  it('shows the names `tenants create` was given (--admin-first-name, --admin-last-name)', async () => {
    const adminEmail = `named.${randomUUID()}@example.test`;
    const { employerId, adminUserId: named } = await createEmployer(service.ctx, { tenantId: null, actor: { type: 'system', id: 'test' } }, {
      name: 'Named Co', adminEmail, adminGivenName: 'Grace', adminFamilyName: 'Hopper',
    });
    const cookie = await service.signIn(employerId, named);
    const token = await enableScim(service, { cookie });
    const user = await scimClient(service, token).request('GET', `/Users/${named}`);
    expect(user.body.name).toEqual({ givenName: 'Grace', familyName: 'Hopper' });
    // A name is searchable once it is stored.
    const found = await scimClient(service, token).request('GET', filterPath('Users', 'name.familyName eq "Hopper"'));
    expect(found.body.Resources.map((resource: { id: string }) => resource.id)).toEqual([named]);
  });
});
