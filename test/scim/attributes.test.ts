// POST/PUT bodies as Okta and Entra ID send them, read into the service's user and group shapes,
// and the attributes/excludedAttributes selection of responses.
import { describe, expect, it } from 'vitest';
import { parseScimGroup, parseScimUser, selectAttributes } from '../../src/scim/attributes.ts';
import { refusal } from '../support/scim-refusal.ts';

describe('User bodies', () => {
  it("reads Okta's create body, keeping locale and dropping password and groups", () => {
    const body = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'test.user@okta.local',
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    };
    expect(parseScimUser(body)).toEqual({
      userName: 'test.user@okta.local',
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      active: true,
    });
  });

  it("reads Entra ID's create body with the enterprise extension and string booleans", () => {
    const body = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName: 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1',
      active: 'True',
      emails: [{ primary: 'True', type: 'work', value: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com' }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: '701984', department: 'Tour Operations' },
    };
    expect(parseScimUser(body)).toEqual({
      userName: 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1',
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      active: true,
      emails: [{ primary: true, type: 'work', value: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com' }],
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { employeeNumber: '701984', department: 'Tour Operations' },
    });
  });

  it('takes a user without active as active and without emails as having none', () => {
    expect(parseScimUser({ userName: 'min@example.com' })).toEqual({ userName: 'min@example.com', active: true, emails: [] });
  });

  it('refuses a body without userName, or with a value of the wrong type, with invalidValue', () => {
    const missing = refusal(() => parseScimUser({ name: { givenName: 'x' } }));
    expect([missing.status, missing.scimType]).toEqual([400, 'invalidValue']);
    expect(missing.message).toContain('userName');
    expect(refusal(() => parseScimUser({ userName: 'a@b.c', active: 'maybe' })).message).toContain('active');
    expect(refusal(() => parseScimUser({ userName: '   ' })).scimType).toBe('invalidValue');
  });
});

describe('Group bodies', () => {
  it("reads Entra ID's and Okta's create bodies, keeping member ids only and once", () => {
    expect(
      parseScimGroup({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
        externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
        displayName: 'displayName',
        meta: { resourceType: 'Group' },
      }),
    ).toEqual({ externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159', displayName: 'displayName', members: [] });
    expect(
      parseScimGroup({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
        displayName: 'Test SCIMv2',
        members: [
          { value: '23a35c27-23d3-4c03-b4c5-6443c09e7173', display: 'test.user@okta.local' },
          { value: '23a35c27-23d3-4c03-b4c5-6443c09e7173' },
        ],
      }),
    ).toEqual({ displayName: 'Test SCIMv2', members: [{ value: '23a35c27-23d3-4c03-b4c5-6443c09e7173' }] });
  });

  it('refuses a group without displayName or with a member without value', () => {
    expect(refusal(() => parseScimGroup({ members: [] })).scimType).toBe('invalidValue');
    expect(refusal(() => parseScimGroup({ displayName: 'x', members: [{ display: 'y' }] })).message).toContain('members.0.value');
  });
});

describe('attribute selection', () => {
  const user = {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    id: 'b1c2',
    userName: 'henry@contoso.com',
    name: { givenName: 'Henry', familyName: 'Ross' },
    emails: [{ value: 'henry@contoso.com', type: 'work', primary: true }],
    active: true,
    meta: { resourceType: 'User' },
  };
  const group = { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], id: 'g1', displayName: 'Eng', members: [{ value: 'b1c2' }] };

  it('drops members when Entra ID asks excludedAttributes=members', () => {
    expect(selectAttributes(group, { excludedAttributes: 'members' })).toEqual({ schemas: group.schemas, id: 'g1', displayName: 'Eng' });
  });

  it('returns only the requested attributes, sub-attributes included, plus schemas and id', () => {
    expect(selectAttributes(user, { attributes: 'UserName, name.givenName,emails.value' })).toEqual({
      schemas: user.schemas,
      id: 'b1c2',
      userName: 'henry@contoso.com',
      name: { givenName: 'Henry' },
      emails: [{ value: 'henry@contoso.com' }],
    });
    expect(selectAttributes(user, { attributes: 'urn:ietf:params:scim:schemas:core:2.0:User:active' })).toEqual({
      schemas: user.schemas,
      id: 'b1c2',
      active: true,
    });
  });

  it('never excludes id or schemas, and excludes sub-attributes', () => {
    expect(selectAttributes(user, { excludedAttributes: 'id,schemas,name.familyName,emails,meta' })).toEqual({
      schemas: user.schemas,
      id: 'b1c2',
      userName: 'henry@contoso.com',
      name: { givenName: 'Henry' },
      active: true,
    });
  });

  it('returns the resource as it is without a selection', () => {
    expect(selectAttributes(user, {})).toBe(user);
  });
});
