// The requests Entra ID's provisioning service sends (its SCIM validator and documented request
// examples): Test Connection with a random GUID, userName lookup, create, PATCH with capitalised ops,
// string booleans and one operation per path, group lookup without members, member add and remove
// with path "members" and a value list. Entra ID sends Content-Type: application/scim+json.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { filterPath, GROUP_SCHEMA, PATCH_OP, scimTenant, USER_SCHEMA, type ScimClient } from './scim-client.ts';

const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

describe('Entra ID provisioning sequence', () => {
  let service: TestService;
  let scim: ScimClient;
  beforeAll(async () => {
    service = await startTestService();
    ({ scim } = await scimTenant(service));
  });
  afterAll(async () => service?.stop());

  const entraUser = (userName: string, email: string) => ({
    schemas: [USER_SCHEMA, ENTERPRISE_SCHEMA],
    externalId: randomUUID(),
    userName,
    active: true,
    emails: [{ primary: true, type: 'work', value: email }],
    meta: { resourceType: 'User' },
    name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
    roles: [],
    [ENTERPRISE_SCHEMA]: { department: 'Finance' },
  });
  const patch = (...operations: unknown[]) => ({ schemas: [PATCH_OP], Operations: operations });

  it('passes Test Connection: a filter on a random GUID is 200 with an empty ListResponse', async () => {
    const response = await scim.request('GET', filterPath('Users', `userName eq "${randomUUID()}"`));
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ totalResults: 0, itemsPerPage: 0, Resources: [] });
  });

  it('creates a user, patches it in both dialects, finds it by work e-mail, disables and deletes it', async () => {
    const userName = `Test_User_${randomUUID()}`;
    const email = `${userName}@testuser.example`;
    expect((await scim.request('GET', filterPath('Users', `userName eq "${userName}"`))).body.totalResults).toBe(0);

    const created = await scim.request('POST', '/Users', entraUser(userName, email));
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.body).toMatchObject({ userName, active: true, emails: [{ value: email, type: 'work', primary: true }] });
    expect((await scim.request('GET', filterPath('Users', `userName eq "${userName}"`))).body.Resources[0].id).toBe(id);

    // Without aadOptscim062020: capitalised ops, one op per path, filtered paths.
    const updatedEmail = `updated.${randomUUID()}@testuser.example`;
    const updated = await scim.request(
      'PATCH',
      `/Users/${id}`,
      patch(
        { op: 'Replace', path: 'emails[type eq "work"].value', value: updatedEmail },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
        { op: 'Add', path: 'displayName', value: 'Updated Display' },
      ),
    );
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ emails: [{ value: updatedEmail, type: 'work', primary: true }], name: { familyName: 'updatedFamilyName', givenName: 'givenName' }, displayName: 'Updated Display' });
    const byWorkEmail = await scim.request('GET', filterPath('Users', `emails[type eq "work"].value eq "${updatedEmail.toUpperCase()}"`));
    expect(byWorkEmail.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);
    const byEmail = await scim.request('GET', filterPath('Users', `emails.value eq "${updatedEmail}"`));
    expect(byEmail.body.totalResults).toBe(1);
    expect((await scim.request('GET', filterPath('Users', `emails.value eq "${email}"`))).body.totalResults).toBe(0);

    // With aadOptscim062020: path-less replace with dotted keys and real booleans.
    const flagged = await scim.request('PATCH', `/Users/${id}`, patch({ op: 'replace', value: { 'name.givenName': 'Grace', displayName: 'Grace H' } }));
    expect(flagged.body).toMatchObject({ name: { givenName: 'Grace', familyName: 'updatedFamilyName' }, displayName: 'Grace H' });

    const disabled = await scim.request('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'active', value: 'False' }));
    expect(disabled.status).toBe(200);
    expect(disabled.body.active).toBe(false);
    expect((await scim.request('GET', filterPath('Users', `externalId eq "${created.body.externalId}"`))).body.Resources[0].active).toBe(false);

    expect((await scim.request('DELETE', `/Users/${id}`)).status).toBe(204);
    const gone = await scim.request('GET', `/Users/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '404' });
    expect((await scim.request('GET', filterPath('Users', `userName eq "${userName}"`))).body.totalResults).toBe(0);
    expect((await scim.request('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'active', value: 'True' }))).status).toBe(404);
    // kept internally, deactivated
    const [row] = await service.ctx.db.pg.query('SELECT active, scim_deleted FROM users WHERE id = $1', [id]).then((result) => result.rows);
    expect(row).toEqual({ active: false, scim_deleted: true });
  });

  it('provisions a user again after deleting it: the deleted one is no conflict (RFC 7644 section 3.6)', async () => {
    const userName = `again.${randomUUID()}@contoso.test`;
    const first = await scim.request('POST', '/Users', entraUser(userName, userName));
    expect(first.status).toBe(201);
    expect((await scim.request('DELETE', `/Users/${first.body.id}`)).status).toBe(204);

    const again = await scim.request('POST', '/Users', entraUser(userName, userName));
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
    const lookup = await scim.request('GET', filterPath('Users', `userName eq "${userName}"`));
    expect(lookup.body).toMatchObject({ totalResults: 1, Resources: [{ id: again.body.id, active: true }] });
    expect((await scim.request('GET', `/Users/${first.body.id}`)).status).toBe(404);
    // Another employer may take a deleted user's address too; the live holder still blocks it.
    const other = await scimTenant(service);
    expect((await other.scim.request('POST', '/Users', entraUser(userName, userName))).body).toMatchObject({ status: '409', scimType: 'uniqueness' });
    expect((await scim.request('DELETE', `/Users/${again.body.id}`)).status).toBe(204);
    expect((await other.scim.request('POST', '/Users', entraUser(userName, userName))).status).toBe(201);
  });

  it('provisions a group: lookup without members, create, add and remove members by value list, rename', async () => {
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      const userName = `Test_User_${name}_${randomUUID()}`;
      ids.push((await scim.request('POST', '/Users', entraUser(userName, `${userName}@testuser.example`))).body.id);
    }
    const [a, b, c] = ids as [string, string, string];
    const displayName = `Group_${randomUUID()}`;

    const lookup = await scim.request('GET', `${filterPath('Groups', `displayName eq "${displayName}"`)}&excludedAttributes=members`);
    expect(lookup.status).toBe(200);
    expect(lookup.body.totalResults).toBe(0);

    const created = await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], externalId: randomUUID(), displayName, meta: { resourceType: 'Group' } });
    expect(created.status).toBe(201);
    const groupId = created.body.id as string;

    const added = await scim.request('PATCH', `/Groups/${groupId}`, patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: a }, { $ref: null, value: b }, { $ref: null, value: c }] }));
    expect(added.status).toBe(200);
    expect(added.body.members.map((member: { value: string }) => member.value)).toEqual([a, b, c]);

    const removed = await scim.request('PATCH', `/Groups/${groupId}`, patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: b }] }));
    expect(removed.status).toBe(200);
    // only that member goes, never the whole list
    expect(removed.body.members.map((member: { value: string }) => member.value)).toEqual([a, c]);

    const renamed = await scim.request('PATCH', `/Groups/${groupId}`, patch({ op: 'Replace', path: 'displayName', value: `${displayName}-renamed` }));
    expect(renamed.body.displayName).toBe(`${displayName}-renamed`);

    const withoutMembers = await scim.request('GET', `${filterPath('Groups', `displayName eq "${displayName}-renamed"`)}&excludedAttributes=members`);
    expect(withoutMembers.body.totalResults).toBe(1);
    expect(withoutMembers.body.Resources[0]).toMatchObject({ id: groupId, displayName: `${displayName}-renamed` });
    expect(withoutMembers.body.Resources[0]).not.toHaveProperty('members');
    const single = await scim.request('GET', `/Groups/${groupId}?excludedAttributes=members`);
    expect(single.body).not.toHaveProperty('members');
    expect(single.headers.get('etag')).toBe(single.body.meta.version);

    // a member deleted through SCIM no longer shows in the group
    expect((await scim.request('DELETE', `/Users/${c}`)).status).toBe(204);
    expect((await scim.request('GET', `/Groups/${groupId}`)).body.members.map((member: { value: string }) => member.value)).toEqual([a]);

    expect((await scim.request('DELETE', `/Groups/${groupId}`)).status).toBe(204);
    expect((await scim.request('GET', `/Groups/${groupId}`)).status).toBe(404);
  });
});
