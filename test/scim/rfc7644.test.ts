// RFC 7644 cases validators probe: POST .search (section 3.4.3) at the root and per resource type,
// If-None-Match with the current ETag (304), a trailing slash on the list endpoints, Groups filtered
// by `members eq "<id>"`, and /Schemas telling the truth about e-mail uniqueness and group members.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { filterPath, GROUP_SCHEMA, scimTenant, USER_SCHEMA, type ScimClient } from './scim-client.ts';

const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describe('SCIM as RFC 7644 validators read it', () => {
  let service: TestService;
  let scim: ScimClient;
  let userIds: string[];
  let groupId: string;
  beforeAll(async () => {
    service = await startTestService();
    ({ scim } = await scimTenant(service));
    userIds = [];
    for (const name of ['ann', 'bob']) {
      const login = `${name}.${randomUUID()}@example.test`;
      const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: login, name: { givenName: name, familyName: 'Search' } });
      userIds.push(created.body.id);
    }
    groupId = (await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Searchers', members: [{ value: userIds[1] }] })).body.id;
  });
  afterAll(async () => service?.stop());

  it('searches users, groups and both with POST .search', async () => {
    const users = await scim.request('POST', '/Users/.search', {
      schemas: [SEARCH_REQUEST],
      filter: 'name.familyName eq "Search"',
      attributes: ['userName', 'name.givenName'],
      startIndex: 1,
      count: 10,
    });
    expect(users.status).toBe(200);
    expect(users.body.totalResults).toBe(2);
    expect(users.body.Resources.map((user: { id: string }) => user.id)).toEqual(userIds);
    // Only the attributes asked for, with the ones always returned.
    expect(Object.keys(users.body.Resources[0]).sort()).toEqual(['id', 'name', 'schemas', 'userName']);
    expect(users.body.Resources[0].name).toEqual({ givenName: 'ann' });

    const groups = await scim.request('POST', '/Groups/.search', { schemas: [SEARCH_REQUEST], filter: `members eq "${userIds[1]}"`, excludedAttributes: ['members'] });
    expect(groups.status).toBe(200);
    expect(groups.body.Resources).toEqual([expect.objectContaining({ id: groupId, displayName: 'Searchers' })]);
    expect(groups.body.Resources[0]).not.toHaveProperty('members');

    // The root: users first, then groups, paged as one sequence (the admin is the tenant's first user).
    const all = await scim.request('POST', '/.search', { schemas: [SEARCH_REQUEST], startIndex: 2, count: 2 });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ totalResults: 4, startIndex: 2, itemsPerPage: 2 });
    expect(all.body.Resources.map((resource: { id: string }) => resource.id)).toEqual(userIds);
    const last = await scim.request('POST', '/.search', { schemas: [SEARCH_REQUEST], startIndex: 4, count: 2 });
    expect(last.body.Resources.map((resource: { id: string; meta: { resourceType: string } }) => [resource.id, resource.meta.resourceType])).toEqual([[groupId, 'Group']]);
    // A filter only users know searches users only.
    const byUserName = await scim.request('POST', '/.search', { schemas: [SEARCH_REQUEST], filter: 'name.givenName eq "bob"' });
    expect(byUserName.body.Resources.map((resource: { id: string }) => resource.id)).toEqual([userIds[1]]);
    const byDisplayName = await scim.request('POST', '/.search', { schemas: [SEARCH_REQUEST], filter: 'displayName eq "Searchers"' });
    expect(byDisplayName.body.Resources.map((resource: { id: string }) => resource.id)).toEqual([groupId]);

    const unknown = await scim.request('POST', '/.search', { schemas: [SEARCH_REQUEST], filter: 'nickName eq "x"' });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ scimType: 'invalidFilter' });
    const notSearch = await scim.request('POST', '/Users/.search', { schemas: [USER_SCHEMA] });
    expect(notSearch.status).toBe(400);
    expect(notSearch.body).toMatchObject({ scimType: 'invalidValue' });
  });

  it('answers If-None-Match with the current ETag with 304 and no body, another ETag with the resource', async () => {
    for (const path of [`/Users/${userIds[0]}`, `/Groups/${groupId}`]) {
      const current = await scim.request('GET', path);
      const etag = current.headers.get('etag')!;
      const unchanged = await scim.request('GET', path, undefined, { 'if-none-match': etag });
      expect(unchanged.status).toBe(304);
      expect(unchanged.body).toBeNull();
      expect(unchanged.headers.get('etag')).toBe(etag);
      expect((await scim.request('GET', path, undefined, { 'if-none-match': '*' })).status).toBe(304);
      const stale = await scim.request('GET', path, undefined, { 'if-none-match': 'W/"999999"' });
      expect(stale.status).toBe(200);
      expect(stale.body.id).toBe(current.body.id);
    }
  });

  it('lists with a trailing slash as without', async () => {
    for (const resource of ['Users', 'Groups'] as const) {
      const plain = await scim.request('GET', `/${resource}`);
      const slashed = await scim.request('GET', `/${resource}/`);
      expect(slashed.status).toBe(200);
      expect(slashed.body).toEqual(plain.body);
    }
  });

  it('filters groups by members eq, as by members.value and members[value eq]', async () => {
    for (const filter of [`members eq "${userIds[1]}"`, `members.value eq "${userIds[1]}"`, `members[value eq "${userIds[1]}"]`]) {
      const found = await scim.request('GET', filterPath('Groups', filter));
      expect(found.status).toBe(200);
      expect(found.body.Resources.map((group: { id: string }) => group.id)).toEqual([groupId]);
    }
    expect((await scim.request('GET', filterPath('Groups', `members eq "${userIds[0]}"`))).body.totalResults).toBe(0);
  });

  it('declares the e-mail uniqueness it enforces, and the group-members rule it answers with', async () => {
    const email = `shared.${randomUUID()}@example.test`;
    expect((await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'first-holder', emails: [{ value: email, type: 'work' }] })).status).toBe(201);
    const second = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'second-holder', emails: [{ value: email, type: 'work' }] });
    expect(second.status).toBe(409);
    expect(second.body.scimType).toBe('uniqueness');

    const schemas = (await scim.request('GET', '/Schemas')).body.Resources as { id: string; attributes: { name: string; uniqueness: string; description: string; subAttributes?: { name: string; uniqueness: string }[] }[] }[];
    const emails = schemas.find((schema) => schema.id === USER_SCHEMA)!.attributes.find((attribute) => attribute.name === 'emails')!;
    expect(emails.uniqueness).toBe('server');
    expect(emails.subAttributes?.find((sub) => sub.name === 'value')?.uniqueness).toBe('server');

    const members = schemas.find((schema) => schema.id === GROUP_SCHEMA)!.attributes.find((attribute) => attribute.name === 'members')!;
    expect(members.description).toMatch(/users of this employer only.*400 invalidValue/);
    const stranger = randomUUID();
    const refused = await scim.request('PATCH', `/Groups/${groupId}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: [{ value: userIds[0] }, { value: stranger }] }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ scimType: 'invalidValue' });
    expect(refused.body.detail).toContain(stranger);
    expect(refused.body.detail).not.toContain(userIds[0]);
    const config = (await scim.request('GET', '/ServiceProviderConfig')).body;
    expect(config.documentationUri).toBe(`${service.url}/docs`);
  });
});
