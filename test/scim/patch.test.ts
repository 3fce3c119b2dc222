// PATCH bodies as Okta and Entra ID send them (Okta's SCIM 2.0 reference; Entra ID's provisioning
// requests with and without the aadOptscim062020 flag), applied to the service's user and group shapes.
import { describe, expect, it } from 'vitest';
import type { ScimGroupDoc, ScimUserDoc } from '../../src/scim/attributes.ts';
import type { ScimErrorType } from '../../src/scim/errors.ts';
import { applyGroupPatch, applyUserPatch, normalisePatchRequest } from '../../src/scim/patch.ts';
import { refusal } from '../support/scim-refusal.ts';

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const patchOf = (...Operations: unknown[]) => ({ schemas: [PATCH_OP], Operations });

const henry: ScimUserDoc = {
  userName: 'henry.ross@contoso.com',
  externalId: 'e2c1a9b0-hr',
  active: true,
  displayName: 'Henry Ross',
  name: { givenName: 'Henry', familyName: 'Ross' },
  emails: [{ value: 'henry.ross@contoso.com', type: 'work', primary: true }],
};

const ALICE = '23a35c27-23d3-4c03-b4c5-6443c09e7173';
const BOB = 'f648f8d5-ea3e-4456-bd9f-0fac7d53f55e';
const CAROL = '7f4bc1a3-285e-48ae-8202-5accb43efb0e';

const engineering: ScimGroupDoc = {
  displayName: 'Engineering',
  externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
  members: [{ value: ALICE }, { value: BOB }, { value: CAROL }],
};

function expectRefused(apply: () => unknown, scimType: ScimErrorType): void {
  const error = refusal(apply);
  expect(error.status).toBe(400);
  expect(error.scimType).toBe(scimType);
}

describe('Okta', () => {
  it('deactivates with a path-less replace of { active: false } and reactivates the same way', () => {
    const deactivated = applyUserPatch(henry, patchOf({ op: 'replace', value: { active: false } }));
    expect(deactivated).toEqual({ ...henry, active: false });
    expect(applyUserPatch(deactivated, patchOf({ op: 'replace', value: { active: true } }))).toEqual(henry);
  });

  it('renames a group with a path-less replace whose value carries the read-only id, ignoring the id', () => {
    const result = applyGroupPatch(
      engineering,
      patchOf({ op: 'replace', value: { id: 'abf4dd94-a4c0-4f67-89c9-76b03340cb9b', displayName: 'Test SCIMv2' } }),
    );
    expect(result).toEqual({ doc: { ...engineering, displayName: 'Test SCIMv2' }, membersAdded: [], membersRemoved: [] });
  });

  it('adds members sent with their display name, and does not add an existing member twice', () => {
    const newcomer = '9c0f4f55-8e2d-4a0b-9a51-0d7c6d9c1b2e';
    const result = applyGroupPatch(
      engineering,
      patchOf({
        op: 'add',
        path: 'members',
        value: [
          { value: newcomer, display: 'new.user@okta.local' },
          { value: ALICE, display: 'test.user@okta.local' },
        ],
      }),
    );
    expect(result.doc.members).toEqual([{ value: ALICE }, { value: BOB }, { value: CAROL }, { value: newcomer }]);
    expect(result.membersAdded).toEqual([newcomer]);
    expect(result.membersRemoved).toEqual([]);
  });

  it('removes one member with a members[value eq "<id>"] path', () => {
    const result = applyGroupPatch(engineering, patchOf({ op: 'remove', path: `members[value eq "${ALICE}"]` }));
    expect(result.doc.members).toEqual([{ value: BOB }, { value: CAROL }]);
    expect(result.membersRemoved).toEqual([ALICE]);
  });

  it('replaces all members', () => {
    const newcomer = '0e5b3a7c-1d2f-4e6a-8b9c-0d1e2f3a4b5c';
    const result = applyGroupPatch(
      engineering,
      patchOf({ op: 'replace', path: 'members', value: [{ value: BOB, display: 'bob@okta.local' }, { value: newcomer, display: 'n@okta.local' }] }),
    );
    expect(result.doc.members).toEqual([{ value: BOB }, { value: newcomer }]);
    expect(result.membersAdded).toEqual([newcomer]);
    expect(result.membersRemoved).toEqual([ALICE, CAROL]);
  });
});

describe('Entra ID without aadOptscim062020', () => {
  it('deactivates with a capitalised Replace and the string "False"', () => {
    expect(applyUserPatch(henry, patchOf({ op: 'Replace', path: 'active', value: 'False' }))).toEqual({ ...henry, active: false });
    const deactivated = { ...henry, active: false };
    expect(applyUserPatch(deactivated, patchOf({ op: 'Replace', path: 'active', value: 'True' }))).toEqual(henry);
  });

  it('updates several attributes with one operation per path', () => {
    const updated = applyUserPatch(
      henry,
      patchOf(
        { op: 'Replace', path: 'displayName', value: 'Pvlo' },
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'TestBcwqnm@test.microsoft.com' },
        { op: 'Replace', path: 'name.givenName', value: 'Harry' },
        { op: 'Replace', path: 'name.familyName', value: 'Rose' },
        { op: 'Replace', path: 'userName', value: 'harry.rose@contoso.com' },
        { op: 'Add', path: 'externalId', value: 'b7e2-new-external-id' },
      ),
    );
    expect(updated).toEqual({
      userName: 'harry.rose@contoso.com',
      externalId: 'b7e2-new-external-id',
      active: true,
      displayName: 'Pvlo',
      name: { givenName: 'Harry', familyName: 'Rose' },
      emails: [{ value: 'TestBcwqnm@test.microsoft.com', type: 'work', primary: true }],
    });
  });

  it('treats Add on an existing emails[type eq "work"].value as a replacement of that value', () => {
    const updated = applyUserPatch(henry, patchOf({ op: 'Add', path: 'emails[type eq "work"].value', value: 'henry@joe.com' }));
    expect(updated.emails).toEqual([{ value: 'henry@joe.com', type: 'work', primary: true }]);
  });

  it('adds the work e-mail when a replace on emails[type eq "work"].value finds none', () => {
    const withoutEmail: ScimUserDoc = { userName: 'sandy@contoso.com', active: true, emails: [] };
    const updated = applyUserPatch(withoutEmail, patchOf({ op: 'Replace', path: 'emails[type eq "work"].value', value: 'sandy@contoso.com' }));
    expect(updated.emails).toEqual([{ type: 'work', value: 'sandy@contoso.com' }]);
  });

  it('adds a member with Add members [{ value }]', () => {
    const group: ScimGroupDoc = { displayName: 'Engineering', members: [{ value: ALICE }] };
    const result = applyGroupPatch(group, patchOf({ op: 'Add', path: 'members', value: [{ value: BOB }] }));
    expect(result.doc.members).toEqual([{ value: ALICE }, { value: BOB }]);
    expect(result.membersAdded).toEqual([BOB]);
  });

  it('removes only the listed members with Remove members [{ value }], never the whole group', () => {
    const result = applyGroupPatch(engineering, patchOf({ op: 'Remove', path: 'members', value: [{ value: BOB }] }));
    expect(result.doc.members).toEqual([{ value: ALICE }, { value: CAROL }]);
    expect(result.membersRemoved).toEqual([BOB]);
    expect(result.membersAdded).toEqual([]);
  });

  it('removes several listed members, and ignores a listed id that is not a member', () => {
    const stranger = '5d6e7f80-9a0b-4c1d-8e2f-3a4b5c6d7e8f';
    const result = applyGroupPatch(
      engineering,
      patchOf({ op: 'Remove', path: 'members', value: [{ value: ALICE }, { value: CAROL }, { value: stranger }] }),
    );
    expect(result.doc.members).toEqual([{ value: BOB }]);
    expect(result.membersRemoved).toEqual([ALICE, CAROL]);
  });

  it('matches removed members by value alone, whatever else the entries carry', () => {
    const result = applyGroupPatch(
      engineering,
      patchOf({ op: 'Remove', path: 'members', value: [{ value: BOB, display: 'Bob', $ref: `https://idp.example/Users/${BOB}` }] }),
    );
    expect(result.doc.members).toEqual([{ value: ALICE }, { value: CAROL }]);
    expect(result.membersRemoved).toEqual([BOB]);
  });

  it('renames a group and changes its externalId with one operation each', () => {
    const result = applyGroupPatch(
      engineering,
      patchOf(
        { op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' },
        { op: 'Replace', path: 'externalId', value: '0f1e2d3c-new' },
      ),
    );
    expect(result.doc).toEqual({ ...engineering, displayName: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName', externalId: '0f1e2d3c-new' });
  });

  it('patches the attributes beyond the core ones: the enterprise extension by its URN path, title, a filtered phone number', () => {
    const updated = applyUserPatch(
      henry,
      patchOf(
        { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Engineering' },
        { op: 'Replace', path: 'title', value: 'Engineer' },
        { op: 'Add', path: 'phoneNumbers[type eq "work"].value', value: '+1 555 0100' },
        { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', value: 'manager-id' },
      ),
    );
    expect(updated).toEqual({
      ...henry,
      title: 'Engineer',
      phoneNumbers: [{ type: 'work', value: '+1 555 0100' }],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Engineering', manager: { value: 'manager-id' } },
    });
  });

  it('drops what the service does not keep (nickName, roles) without changing the user', () => {
    expect(applyUserPatch(henry, patchOf({ op: 'Add', path: 'nickName', value: 'Hal' }, { op: 'Add', path: 'roles', value: [{ value: 'x' }] }))).toEqual(henry);
  });
});

describe('Entra ID with aadOptscim062020', () => {
  it('deactivates with a lower-case replace and a real boolean, with or without a path', () => {
    expect(applyUserPatch(henry, patchOf({ op: 'replace', path: 'active', value: false }))).toEqual({ ...henry, active: false });
    expect(applyUserPatch(henry, patchOf({ op: 'replace', value: { active: false } }))).toEqual({ ...henry, active: false });
  });

  it('updates several attributes with one path-less replace whose keys are paths', () => {
    const updated = applyUserPatch(
      henry,
      patchOf({
        op: 'replace',
        value: {
          displayName: 'Pvlo',
          'emails[type eq "work"].value': 'TestMhvaes@test.microsoft.com',
          'emails[type eq "work"].primary': true,
          'name.givenName': 'Harry',
          'name.familyName': 'Rose',
          active: 'False',
        },
      }),
    );
    expect(updated).toEqual({
      ...henry,
      active: false,
      displayName: 'Pvlo',
      name: { givenName: 'Harry', familyName: 'Rose' },
      emails: [{ value: 'TestMhvaes@test.microsoft.com', type: 'work', primary: true }],
    });
  });

  it('removes one member with a members[value eq "<id>"] path', () => {
    const result = applyGroupPatch(engineering, patchOf({ op: 'remove', path: `members[value eq "${CAROL}"]` }));
    expect(result.doc.members).toEqual([{ value: ALICE }, { value: BOB }]);
    expect(result.membersRemoved).toEqual([CAROL]);
  });

  it('adds members with a path-less add', () => {
    const group: ScimGroupDoc = { displayName: 'Design', members: [] };
    const result = applyGroupPatch(group, patchOf({ op: 'add', value: { members: [{ value: ALICE }, { value: BOB }] } }));
    expect(result.doc.members).toEqual([{ value: ALICE }, { value: BOB }]);
    expect(result.membersAdded).toEqual([ALICE, BOB]);
  });

  it('ignores a path-less add of an attribute the service does not keep', () => {
    expect(applyUserPatch(henry, patchOf({ op: 'add', value: { nickName: 'Babs' } }))).toEqual(henry);
  });
});

describe('normalisation', () => {
  it('turns every dialect into lower-case operations with canonical paths', () => {
    expect(
      normalisePatchRequest(
        patchOf(
          { op: 'Replace', path: 'urn:ietf:params:scim:schemas:core:2.0:User:Name.GivenName', value: 'X' },
          { op: 'REPLACE', value: { ACTIVE: 'false', 'emails[type eq "work"].value': 'a@b.c', id: 'ignored', schemas: [] } },
          { op: 'Remove', path: 'members[value eq "x"]' },
        ),
      ),
    ).toEqual([
      { op: 'replace', path: 'name.givenName', value: 'X' },
      { op: 'replace', path: 'active', value: false },
      { op: 'replace', path: 'emails[type eq "work"].value', value: 'a@b.c' },
      { op: 'remove', path: 'members[value eq "x"]' },
    ]);
  });

  it('accepts attribute names in any case', () => {
    expect(applyUserPatch(henry, patchOf({ op: 'replace', path: 'NAME.givenname', value: 'Hank' })).name).toEqual({ givenName: 'Hank', familyName: 'Ross' });
  });

  it('leaves the given document unchanged', () => {
    const copy = structuredClone(engineering);
    applyGroupPatch(engineering, patchOf({ op: 'remove', path: 'members', value: [{ value: ALICE }] }));
    expect(engineering).toEqual(copy);
  });

  it('applies operations in order, each on the result of the previous one', () => {
    const result = applyGroupPatch(
      engineering,
      patchOf(
        { op: 'remove', path: 'members' },
        { op: 'add', path: 'members', value: [{ value: BOB }] },
        { op: 'remove', path: `members[value eq "${BOB}"]` },
        { op: 'remove', path: `members[value eq "${BOB}"]` },
      ),
    );
    expect(result.doc.members).toEqual([]);
    expect(result.membersRemoved).toEqual([ALICE, BOB, CAROL]);
  });

  it('treats removing a filtered value that is absent as done', () => {
    const withoutEmail: ScimUserDoc = { userName: 'sandy@contoso.com', active: true, emails: [] };
    expect(applyUserPatch(withoutEmail, patchOf({ op: 'Remove', path: 'emails[type eq "work"].value' }))).toEqual(withoutEmail);
    expect(applyGroupPatch(engineering, patchOf({ op: 'remove', path: 'members[value eq "nobody"]' })).membersRemoved).toEqual([]);
  });

  it('drops an e-mail whose value was removed', () => {
    expect(applyUserPatch(henry, patchOf({ op: 'Remove', path: 'emails[type eq "work"].value' })).emails).toEqual([]);
  });
});

describe('refusals (RFC 7644 section 3.5.2 and table 9)', () => {
  it('refuses a body that is not a PatchOp request with invalidSyntax', () => {
    expectRefused(() => applyUserPatch(henry, { Operations: [{ op: 'replace', path: 'active', value: false }] }), 'invalidSyntax');
    expectRefused(() => applyUserPatch(henry, { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], Operations: [] }), 'invalidSyntax');
    expectRefused(() => applyUserPatch(henry, patchOf()), 'invalidSyntax');
    expectRefused(() => applyUserPatch(henry, 'not json'), 'invalidSyntax');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'move', path: 'userName', value: 'x' })), 'invalidSyntax');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'userName' })), 'invalidSyntax');
  });

  it('refuses a remove without a path with noTarget', () => {
    expectRefused(() => applyGroupPatch(engineering, patchOf({ op: 'remove', value: [{ value: ALICE }] })), 'noTarget');
  });

  it('refuses a replace of a filtered element that does not exist with noTarget', () => {
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'emails[type eq "home"]', value: { value: 'h@home.example' } })), 'noTarget');
  });

  it('refuses a path that does not parse with invalidPath', () => {
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'emails[type eq ].value', value: 'x' })), 'invalidPath');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'name..givenName', value: 'x' })), 'invalidPath');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', value: { 'bad key!': 'x' } })), 'invalidPath');
  });

  it('refuses a change of a read-only attribute named by a path with mutability', () => {
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'id', value: 'other' })), 'mutability');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'meta.lastModified', value: '2024-01-01T00:00:00Z' })), 'mutability');
  });

  it('refuses values of the wrong type with invalidValue', () => {
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'Replace', path: 'active', value: 'maybe' })), 'invalidValue');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', path: 'userName', value: 42 })), 'invalidValue');
    expectRefused(() => applyUserPatch(henry, patchOf({ op: 'replace', value: 'not an object' })), 'invalidValue');
    expectRefused(() => applyGroupPatch(engineering, patchOf({ op: 'add', path: 'members', value: [{ display: 'no id' }] })), 'invalidValue');
  });

  it('refuses removing a required attribute with invalidValue', () => {
    const error = refusal(() => applyUserPatch(henry, patchOf({ op: 'remove', path: 'userName' })));
    expect(error.scimType).toBe('invalidValue');
    expect(error.message).toContain('userName');
    expectRefused(() => applyGroupPatch(engineering, patchOf({ op: 'remove', path: 'displayName' })), 'invalidValue');
  });
});

describe('prototype names (issue 20, item 1)', () => {
  const planted = { 'x-api-key': 'mt_live_planted', 'x-api-version': 'v1' };
  const inherited = () => ['x-api-key', 'x-api-version', 'polluted'].filter((name) => ({} as Record<string, unknown>)[name] !== undefined);

  it('refuses paths and value filters naming a prototype member with invalidPath, and value keys with invalidValue, leaving Object.prototype as it was', () => {
    // This file starts no service: Object.prototype is not sealed here, so only the refusals stand between these and it.
    const before = Reflect.ownKeys(Object.prototype);
    const refusals: [unknown, ScimErrorType][] = [
      [{ op: 'replace', path: 'constructor.prototype', value: planted }, 'invalidPath'],
      [{ op: 'add', path: 'constructor.prototype', value: planted }, 'invalidPath'],
      [{ op: 'add', path: '__proto__', value: planted }, 'invalidPath'],
      [{ op: 'add', path: 'urn:ietf:params:scim:schemas:core:2.0:User:constructor.prototype', value: planted }, 'invalidPath'],
      [{ op: 'replace', path: 'toString.polluted', value: 'x' }, 'invalidPath'],
      [{ op: 'replace', path: 'emails[constructor pr].value', value: 'x@example.test' }, 'invalidPath'],
      [{ op: 'remove', path: 'emails[__proto__ eq "x"]' }, 'invalidPath'],
      [{ op: 'add', value: { 'constructor.prototype': planted } }, 'invalidPath'],
      [{ op: 'replace', value: JSON.parse(`{"__proto__": ${JSON.stringify(planted)}}`) }, 'invalidPath'],
      [{ op: 'add', path: 'name', value: { givenName: 'x', constructor: { prototype: planted } } }, 'invalidValue'],
      [{ op: 'add', path: 'name', value: { 'constructor.prototype.polluted': true } }, 'invalidValue'],
      [{ op: 'add', path: 'emails', value: [{ value: 'x@example.test', valueOf: planted }] }, 'invalidValue'],
    ];
    for (const [operation, scimType] of refusals) {
      const error = refusal(() => applyUserPatch(henry, patchOf(operation)));
      expect({ status: error.status, scimType: error.scimType }, JSON.stringify(operation)).toEqual({ status: 400, scimType });
      expect(error.message, JSON.stringify(operation)).toContain('names a prototype member');
      expectRefused(() => applyGroupPatch(engineering, patchOf(operation)), scimType);
    }
    expect(Reflect.ownKeys(Object.prototype)).toEqual(before);
    expect(inherited()).toEqual([]);
  });

  it('still takes values and filters that only hold such a name as text', () => {
    const renamed = applyUserPatch(henry, patchOf({ op: 'replace', path: 'displayName', value: 'constructor' }, { op: 'remove', path: 'emails[value eq "__proto__"]' }));
    expect(renamed).toMatchObject({ displayName: 'constructor', emails: henry.emails });
  });
});
