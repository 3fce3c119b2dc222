// SCIM discovery documents (RFC 7643 sections 5-8, RFC 7644 section 4): what this service really
// supports, for IdPs that read them (Entra ID reads /Schemas when an administrator saves its settings).
// `baseUrl` is the SCIM base, e.g. https://host/api/scim/v2, without a trailing slash.
import { SCIM_ENTERPRISE_USER_SCHEMA, SCIM_GROUP_SCHEMA, SCIM_USER_SCHEMA } from './attributes.ts';

export const SCIM_LIST_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const SCIM_SERVICE_PROVIDER_CONFIG_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const SCIM_RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCIM_SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

/** The most resources one list response returns (ServiceProviderConfig filter.maxResults). */
export const SCIM_MAX_RESULTS = 200;

export type ScimListResponse<T> = {
  schemas: [typeof SCIM_LIST_RESPONSE_SCHEMA];
  totalResults: number;
  itemsPerPage: number;
  startIndex: number;
  Resources: T[];
};

/** A ListResponse of one page; without paging it describes a complete list starting at 1. */
export function scimListResponse<T>(resources: T[], page: { totalResults?: number; startIndex?: number } = {}): ScimListResponse<T> {
  return {
    schemas: [SCIM_LIST_RESPONSE_SCHEMA],
    totalResults: page.totalResults ?? resources.length,
    itemsPerPage: resources.length,
    startIndex: page.startIndex ?? 1,
    Resources: resources,
  };
}

export function buildServiceProviderConfig(baseUrl: string) {
  return {
    schemas: [SCIM_SERVICE_PROVIDER_CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: SCIM_MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    // The API reference: every SCIM operation's rules (group members are users of this employer only, e-mail uniqueness).
    documentationUri: new URL('/docs', baseUrl).href,
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: "Authentication with the employer's SCIM bearer token in the Authorization header.",
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${trimSlash(baseUrl)}/ServiceProviderConfig` },
  };
}

export function buildResourceTypes(baseUrl: string) {
  const base = trimSlash(baseUrl);
  const resourceType = (id: 'User' | 'Group', endpoint: string, description: string, schema: string, extensions: string[] = []) => ({
    schemas: [SCIM_RESOURCE_TYPE_SCHEMA],
    id,
    name: id,
    endpoint,
    description,
    schema,
    schemaExtensions: extensions.map((extension) => ({ schema: extension, required: false })),
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${id}` },
  });
  return [
    resourceType('User', '/Users', 'User Account', SCIM_USER_SCHEMA, [SCIM_ENTERPRISE_USER_SCHEMA]),
    resourceType('Group', '/Groups', `Group. ${GROUP_MEMBERS_RULE}`, SCIM_GROUP_SCHEMA),
  ];
}

type AttributeType = 'string' | 'boolean' | 'complex' | 'reference' | 'dateTime';

type SchemaAttribute = {
  name: string;
  type: AttributeType;
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  canonicalValues?: string[];
  referenceTypes?: string[];
  subAttributes?: SchemaAttribute[];
};

/** An attribute definition with RFC 7643 section 2.2's defaults unless said otherwise. */
function attribute(name: string, type: AttributeType, description: string, details: Partial<SchemaAttribute> = {}): SchemaAttribute {
  return {
    name,
    type,
    multiValued: false,
    description,
    required: false,
    caseExact: false,
    mutability: 'readWrite',
    returned: 'default',
    uniqueness: 'none',
    ...details,
  };
}

/**
 * The sign-in address is held by one user of the whole service (a product rule: an address signs in to
 * one employer), so a second user with it is 409 uniqueness whatever its userName.
 */
const EMAILS_DESCRIPTION =
  "E-mail addresses of the user. The work (else primary, else first) address is the user's sign-in e-mail: unique across the service, " +
  'so a user whose sign-in address another user (of this employer or another) holds is refused with 409 uniqueness.';

/** Group members are users of the employer only (it protects tenants from each other's ids). */
export const GROUP_MEMBERS_RULE =
  'Members are users of this employer only: a request naming any other id is refused as a whole with 400 invalidValue, the unknown ids named in detail.';

const USER_ATTRIBUTES: SchemaAttribute[] = [
  attribute('userName', 'string', "Unique identifier for the user within the service, typically the IdP's sign-in name. Compared case-insensitively.", {
    required: true,
    uniqueness: 'server',
  }),
  attribute('name', 'complex', "The components of the user's name. A user given none is shown with one derived from its e-mail address, until one is set.", {
    subAttributes: [
      attribute('formatted', 'string', 'The full name, formatted for display.'),
      attribute('givenName', 'string', 'Given name (first name).'),
      attribute('middleName', 'string', 'Middle name(s).'),
      attribute('familyName', 'string', 'Family name (last name).'),
    ],
  }),
  attribute('displayName', 'string', 'The name of the user, suitable for display.'),
  attribute('title', 'string', "The user's title, such as Vice President."),
  attribute('preferredLanguage', 'string', "The user's preferred written or spoken language (RFC 7231 Accept-Language), such as en-US."),
  attribute('locale', 'string', "The user's default location for localisation (a language tag), such as en-US."),
  attribute('timezone', 'string', "The user's time zone in the IANA database, such as Europe/Paris."),
  attribute('emails', 'complex', EMAILS_DESCRIPTION, {
    multiValued: true,
    uniqueness: 'server',
    subAttributes: [
      attribute('value', 'string', 'E-mail address; the sign-in address is unique across the service (409 uniqueness).', { uniqueness: 'server' }),
      attribute('type', 'string', 'Kind of address.', { canonicalValues: ['work', 'home', 'other'] }),
      attribute('primary', 'boolean', 'Whether this is the primary address.'),
    ],
  }),
  attribute('phoneNumbers', 'complex', 'Phone numbers of the user.', {
    multiValued: true,
    subAttributes: [
      attribute('value', 'string', 'Phone number.'),
      attribute('type', 'string', 'Kind of number.', { canonicalValues: ['work', 'home', 'mobile', 'fax', 'pager', 'other'] }),
      attribute('primary', 'boolean', 'Whether this is the primary number.'),
    ],
  }),
  attribute('addresses', 'complex', 'Physical mailing addresses of the user.', {
    multiValued: true,
    subAttributes: [
      attribute('formatted', 'string', 'The full address, formatted for display.'),
      attribute('streetAddress', 'string', 'Street address.'),
      attribute('locality', 'string', 'City or locality.'),
      attribute('region', 'string', 'State or region.'),
      attribute('postalCode', 'string', 'Postal code.'),
      attribute('country', 'string', 'Country (ISO 3166-1 alpha-2).'),
      attribute('type', 'string', 'Kind of address.', { canonicalValues: ['work', 'home', 'other'] }),
      attribute('primary', 'boolean', 'Whether this is the primary address.'),
    ],
  }),
  attribute('active', 'boolean', 'Whether the user may sign in; false deactivates the user.'),
];

const ENTERPRISE_USER_ATTRIBUTES: SchemaAttribute[] = [
  attribute('employeeNumber', 'string', 'Numeric or alphanumeric identifier assigned to the person by the organisation.'),
  attribute('costCenter', 'string', 'Name of a cost center.'),
  attribute('organization', 'string', 'Name of an organisation.'),
  attribute('division', 'string', 'Name of a division.'),
  attribute('department', 'string', 'Name of a department.'),
  attribute('manager', 'complex', "The user's manager, as the identity provider knows it (its id there is kept as sent).", {
    subAttributes: [
      attribute('value', 'string', "The id of the user's manager."),
      attribute('displayName', 'string', "The manager's display name.", { mutability: 'readOnly' }),
    ],
  }),
];

const GROUP_ATTRIBUTES: SchemaAttribute[] = [
  attribute('displayName', 'string', 'Name of the group.', { required: true }),
  attribute('members', 'complex', `Users belonging to the group. ${GROUP_MEMBERS_RULE}`, {
    multiValued: true,
    subAttributes: [attribute('value', 'string', 'Identifier of the member user.', { mutability: 'immutable', caseExact: true })],
  }),
];

export function buildSchemas(baseUrl: string) {
  const base = trimSlash(baseUrl);
  const schema = (id: string, name: string, description: string, attributes: SchemaAttribute[]) => ({
    schemas: [SCIM_SCHEMA_SCHEMA],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    schema(SCIM_USER_SCHEMA, 'User', 'User Account', USER_ATTRIBUTES),
    schema(SCIM_GROUP_SCHEMA, 'Group', 'Group', GROUP_ATTRIBUTES),
    schema(SCIM_ENTERPRISE_USER_SCHEMA, 'EnterpriseUser', 'Enterprise User', ENTERPRISE_USER_ATTRIBUTES),
  ];
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
