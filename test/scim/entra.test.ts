// The requests Entra ID's provisioning service sends (its SCIM validator and documented request
// examples): Test Connection with a random GUID, userName lookup, create, PATCH with capitalised ops,
// string booleans and one operation per path, group lookup without members, member add and remove
// with path "members" and a value list. Entra ID sends Content-Type: application/scim+json.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userStream } from '../../src/tenants/user.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { filterPath, GROUP_SCHEMA, PATCH_OP, scimTenant, USER_SCHEMA, type ScimClient } from './scim-client.ts';

const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

describe('Entra ID provisioning sequence', () => {
  let service: TestService;
  let scim: ScimClient;
  let employerId: string;
  beforeAll(async () => {
    service = await startTestService();
    ({ scim, employerId } = await scimTenant(service));
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

  it('keeps what Entra ID sends: the extra attributes and the Enterprise User extension, sealed, patchable with capitalised ops and filterable', async () => {
    const userName = `Test_User_${randomUUID()}`;
    const email = `${userName}@testuser.example`;
    const created = await scim.request('POST', '/Users', {
      ...entraUser(userName, email),
      name: { formatted: 'Ada M Lovelace', familyName: 'Lovelace', givenName: 'Ada', middleName: 'M' },
      title: 'Engineer',
      preferredLanguage: 'en-GB',
      locale: 'en-GB',
      timezone: 'Europe/London',
      phoneNumbers: [{ type: 'work', value: '+44 20 7946 0000', primary: 'True' }, { type: 'mobile', value: '+44 7700 900000' }],
      addresses: [{ type: 'work', streetAddress: '1 Main St', locality: 'London', region: 'LDN', postalCode: 'N1 9GU', country: 'GB', formatted: '1 Main St, London', primary: true }],
      [ENTERPRISE_SCHEMA]: { employeeNumber: '701984', department: 'Finance', costCenter: 'CC-4', organization: 'Acme', division: 'EMEA', manager: { value: 'manager-guid' } },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const expected = {
      schemas: [USER_SCHEMA, ENTERPRISE_SCHEMA],
      name: { formatted: 'Ada M Lovelace', familyName: 'Lovelace', givenName: 'Ada', middleName: 'M' },
      title: 'Engineer',
      preferredLanguage: 'en-GB',
      locale: 'en-GB',
      timezone: 'Europe/London',
      phoneNumbers: [{ type: 'work', value: '+44 20 7946 0000', primary: true }, { type: 'mobile', value: '+44 7700 900000' }],
      addresses: [{ type: 'work', streetAddress: '1 Main St', locality: 'London', region: 'LDN', postalCode: 'N1 9GU', country: 'GB', formatted: '1 Main St, London', primary: true }],
      [ENTERPRISE_SCHEMA]: { employeeNumber: '701984', department: 'Finance', costCenter: 'CC-4', organization: 'Acme', division: 'EMEA', manager: { value: 'manager-guid' } },
    };
    expect(created.body).toMatchObject(expected);
    expect((await scim.request('GET', `/Users/${id}`)).body).toEqual(created.body);

    // Sealed with the user's personal data: none of it in clear in the user's events.
    const events = JSON.stringify((await service.ctx.eventStore.readStream(userStream(employerId, id))).map((event) => event.data));
    expect(events).toContain('sealed');
    for (const value of ['Finance', '701984', 'Engineer', 'Europe/London', '+44 20 7946 0000', '1 Main St']) expect(events).not.toContain(value);

    // Without aadOptscim062020: capitalised ops, paths into the extension, the manager as a bare id.
    const patched = await scim.request('PATCH', `/Users/${id}`, patch(
      { op: 'Replace', path: `${ENTERPRISE_SCHEMA}:department`, value: 'Sales' },
      { op: 'Add', path: `${ENTERPRISE_SCHEMA}:manager`, value: 'other-manager-guid' },
      { op: 'Replace', path: 'title', value: 'Lead Engineer' },
      { op: 'Replace', path: 'phoneNumbers[type eq "mobile"].value', value: '+44 7700 900001' },
      { op: 'Remove', path: `${ENTERPRISE_SCHEMA}:costCenter` },
    ));
    expect(patched.status).toBe(200);
    expect(patched.body.title).toBe('Lead Engineer');
    expect(patched.body.phoneNumbers[1]).toEqual({ type: 'mobile', value: '+44 7700 900001' });
    expect(patched.body[ENTERPRISE_SCHEMA]).toEqual({ employeeNumber: '701984', department: 'Sales', organization: 'Acme', division: 'EMEA', manager: { value: 'other-manager-guid' } });
    // With aadOptscim062020: a path-less Replace whose keys are extension paths.
    const flagged = await scim.request('PATCH', `/Users/${id}`, patch({ op: 'Replace', value: { [`${ENTERPRISE_SCHEMA}:employeeNumber`]: '701985', locale: 'fr-FR' } }));
    expect(flagged.body).toMatchObject({ locale: 'fr-FR', [ENTERPRISE_SCHEMA]: { employeeNumber: '701985' } });

    const byEmployeeNumber = await scim.request('GET', filterPath('Users', `${ENTERPRISE_SCHEMA}:employeeNumber eq "701985"`));
    expect(byEmployeeNumber.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);
    const byDepartment = await scim.request('GET', filterPath('Users', `${ENTERPRISE_SCHEMA}:department eq "sales" and externalId eq "${created.body.externalId}"`));
    expect(byDepartment.body.totalResults).toBe(1);
    const selected = await scim.request('GET', `/Users/${id}?attributes=${encodeURIComponent(`${ENTERPRISE_SCHEMA}:department,userName`)}`);
    expect(selected.body[ENTERPRISE_SCHEMA]).toEqual({ department: 'Sales' });

    // A PUT without them clears them (Okta replaces the whole user).
    const replaced = await scim.request('PUT', `/Users/${id}`, { schemas: [USER_SCHEMA], userName, emails: [{ value: email, type: 'work', primary: true }], active: true });
    expect(replaced.status).toBe(200);
    expect(replaced.body.schemas).toEqual([USER_SCHEMA]);
    for (const attribute of ['title', 'locale', 'phoneNumbers', 'addresses', ENTERPRISE_SCHEMA]) expect(replaced.body).not.toHaveProperty(attribute);
    expect((await scim.request('GET', filterPath('Users', `${ENTERPRISE_SCHEMA}:employeeNumber eq "701985"`))).body.totalResults).toBe(0);
  });

  it('declares the extra attributes and the extension in /Schemas and /ResourceTypes', async () => {
    const types = (await scim.request('GET', '/ResourceTypes')).body.Resources;
    expect(types.find((type: { id: string }) => type.id === 'User').schemaExtensions).toEqual([{ schema: ENTERPRISE_SCHEMA, required: false }]);
    const extension = await scim.request('GET', `/Schemas/${ENTERPRISE_SCHEMA}`);
    expect(extension.status).toBe(200);
    expect(extension.body.attributes.map((attribute: { name: string }) => attribute.name)).toEqual(['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager']);
    const user = (await scim.request('GET', `/Schemas/${USER_SCHEMA}`)).body;
    const names = user.attributes.map((attribute: { name: string }) => attribute.name);
    expect(names).toEqual(expect.arrayContaining(['title', 'preferredLanguage', 'locale', 'timezone', 'phoneNumbers', 'addresses']));
    expect(user.attributes.find((attribute: { name: string }) => attribute.name === 'name').subAttributes.map((sub: { name: string }) => sub.name)).toEqual(['formatted', 'givenName', 'middleName', 'familyName']);
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
