// The SCIM error envelope of SPEC section 7.4 / RFC 7644 section 3.12.
import { describe, expect, it } from 'vitest';
import { ScimError, toScimErrorBody } from '../../src/scim/errors.ts';

describe('toScimErrorBody', () => {
  it('carries the Error schema, the status as a string, the detail and the scimType', () => {
    expect(toScimErrorBody(new ScimError(409, 'uniqueness', 'A user with this e-mail exists.'))).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '409',
      scimType: 'uniqueness',
      detail: 'A user with this e-mail exists.',
    });
  });

  it('leaves scimType out where RFC 7644 defines none', () => {
    expect(toScimErrorBody(new ScimError(401, null, 'Missing or invalid bearer token.'))).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '401',
      detail: 'Missing or invalid bearer token.',
    });
  });
});
