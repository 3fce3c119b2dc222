// Discovery documents: what IdPs read to learn what this service supports.
import { describe, expect, it } from 'vitest';
import { buildResourceTypes, buildSchemas, buildServiceProviderConfig, scimListResponse } from '../../src/scim/discovery.ts';

const BASE = 'https://integrations.example/api/scim/v2/';

describe('ServiceProviderConfig', () => {
  it('describes what is really supported', () => {
    const config = buildServiceProviderConfig(BASE);
    expect(config).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 200 },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: true },
      meta: { resourceType: 'ServiceProviderConfig', location: 'https://integrations.example/api/scim/v2/ServiceProviderConfig' },
    });
    expect(config.authenticationSchemes.map((scheme) => scheme.type)).toEqual(['oauthbearertoken']);
  });
});

describe('ResourceTypes', () => {
  it('lists User and Group with their endpoints, schemas and locations', () => {
    expect(buildResourceTypes(BASE).map(({ id, endpoint, schema, meta }) => ({ id, endpoint, schema, location: meta.location }))).toEqual([
      { id: 'User', endpoint: '/Users', schema: 'urn:ietf:params:scim:schemas:core:2.0:User', location: 'https://integrations.example/api/scim/v2/ResourceTypes/User' },
      { id: 'Group', endpoint: '/Groups', schema: 'urn:ietf:params:scim:schemas:core:2.0:Group', location: 'https://integrations.example/api/scim/v2/ResourceTypes/Group' },
    ]);
  });
});

describe('Schemas', () => {
  const [user, group] = buildSchemas(BASE);

  it('describes the User attributes the service keeps, userName required and unique', () => {
    expect(user?.id).toBe('urn:ietf:params:scim:schemas:core:2.0:User');
    expect(user?.meta.location).toBe('https://integrations.example/api/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User');
    expect(user?.attributes.map((attribute) => attribute.name)).toEqual([
      'userName', 'name', 'displayName', 'title', 'preferredLanguage', 'locale', 'timezone', 'emails', 'phoneNumbers', 'addresses', 'active',
    ]);
    expect(user?.attributes[0]).toMatchObject({ name: 'userName', required: true, uniqueness: 'server', caseExact: false });
    expect(user?.attributes.find((attribute) => attribute.name === 'emails')?.subAttributes?.map((sub) => sub.name)).toEqual(['value', 'type', 'primary']);
  });

  it('describes the Group attributes, members multi-valued', () => {
    expect(group?.id).toBe('urn:ietf:params:scim:schemas:core:2.0:Group');
    expect(group?.attributes.find((attribute) => attribute.name === 'members')).toMatchObject({ type: 'complex', multiValued: true });
  });

  it('gives every attribute all the characteristics of RFC 7643 section 2.2', () => {
    const all = [...(user?.attributes ?? []), ...(group?.attributes ?? [])].flatMap((attribute) => [attribute, ...(attribute.subAttributes ?? [])]);
    for (const attribute of all) {
      expect(Object.keys(attribute)).toEqual(
        expect.arrayContaining(['name', 'type', 'multiValued', 'description', 'required', 'caseExact', 'mutability', 'returned', 'uniqueness']),
      );
    }
  });
});

describe('ListResponse', () => {
  it('wraps a complete list, or a page of a longer one', () => {
    expect(scimListResponse(['a', 'b'])).toEqual({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 2,
      itemsPerPage: 2,
      startIndex: 1,
      Resources: ['a', 'b'],
    });
    expect(scimListResponse([], { totalResults: 0, startIndex: 1 })).toMatchObject({ totalResults: 0, itemsPerPage: 0, Resources: [] });
    expect(scimListResponse(['c'], { totalResults: 3, startIndex: 3 })).toMatchObject({ totalResults: 3, itemsPerPage: 1, startIndex: 3 });
  });
});
