// The SCIM representation of the read-model rows SCIM reads (users: projections/tenants/queries.ts,
// groups: projections/scim-groups/queries.ts), and the SCIM attribute paths a filter may name, mapped
// to the columns of those queries (aliases `u`, `g`).
import { sql } from 'slonik';
import type { ScimGroupMemberRow, ScimGroupRow } from '../../projections/scim-groups/queries.ts';
import type { ScimUserRow } from '../../projections/tenants/queries.ts';
import { SCIM_ENTERPRISE_USER_SCHEMA, SCIM_GROUP_SCHEMA, SCIM_USER_SCHEMA, type ScimGroupDoc, type ScimUserDoc } from './attributes.ts';
import type { ScimAttributeMap } from './filter.ts';

const ENTERPRISE = SCIM_ENTERPRISE_USER_SCHEMA.toLowerCase();

/** Filterable user attributes (lower-case SCIM paths) and the `users` columns behind them. */
export const USER_FILTER_ATTRIBUTES: ScimAttributeMap = {
  id: { column: 'u.id', type: 'string', caseExact: true },
  username: { column: 'u.user_name', type: 'string' },
  externalid: { column: 'u.external_id', type: 'string', caseExact: true },
  displayname: { column: 'u.display_name', type: 'string' },
  active: { column: 'u.active', type: 'boolean' },
  'name.givenname': { column: 'u.given_name', type: 'string' },
  'name.familyname': { column: 'u.family_name', type: 'string' },
  'emails.value': { column: sql.fragment`ARRAY(SELECT e->>'value' FROM jsonb_array_elements(u.emails) AS e)`, type: 'string', multiValued: true },
  'emails[type eq "work"].value': { column: 'u.work_email', type: 'string' },
  title: { column: sql.fragment`u.scim_attributes->>'title'`, type: 'string' },
  [`${ENTERPRISE}:employeenumber`]: { column: sql.fragment`u.scim_attributes->'enterprise'->>'employeeNumber'`, type: 'string', caseExact: true },
  [`${ENTERPRISE}:department`]: { column: sql.fragment`u.scim_attributes->'enterprise'->>'department'`, type: 'string' },
  'meta.created': { column: 'u.created_at', type: 'datetime' },
  'meta.lastmodified': { column: 'u.updated_at', type: 'datetime' },
};

const GROUP_MEMBER_IDS: ScimAttributeMap[string] = {
  column: sql.fragment`ARRAY(SELECT m.user_id FROM group_members m WHERE m.group_id = g.id)`,
  type: 'string',
  caseExact: true,
  multiValued: true,
};

export const GROUP_FILTER_ATTRIBUTES: ScimAttributeMap = {
  id: { column: 'g.id', type: 'string', caseExact: true },
  displayname: { column: 'g.display_name', type: 'string' },
  externalid: { column: 'g.external_id', type: 'string', caseExact: true },
  'members.value': GROUP_MEMBER_IDS,
  // `members eq "<id>"` compares the complex attribute by its value (RFC 7643 section 2.4), as Okta and Entra ID write it.
  members: GROUP_MEMBER_IDS,
  'meta.created': { column: 'g.created_at', type: 'datetime' },
  'meta.lastmodified': { column: 'g.updated_at', type: 'datetime' },
};

/** The version of a row as its weak ETag (meta.version and the ETag header). */
export function etagOf(version: number): string {
  return `W/"${version}"`;
}

/** The SCIM document of a user: from a `users` row, or from the user's stream (src/scim/commands.ts). */
export function scimUserDoc(
  row: Pick<ScimUserRow, 'user_name' | 'external_id' | 'active' | 'display_name' | 'given_name' | 'family_name' | 'emails' | 'scim_attributes'>,
): ScimUserDoc {
  const kept = row.scim_attributes;
  const name = withoutNulls({ givenName: row.given_name, familyName: row.family_name, middleName: kept.middleName, formatted: kept.formattedName });
  return withoutNulls({
    userName: row.user_name,
    externalId: row.external_id,
    active: row.active,
    displayName: row.display_name,
    name: Object.keys(name).length > 0 ? name : null,
    title: kept.title,
    preferredLanguage: kept.preferredLanguage,
    locale: kept.locale,
    timezone: kept.timezone,
    emails: row.emails,
    phoneNumbers: kept.phoneNumbers?.length ? kept.phoneNumbers : null,
    addresses: kept.addresses?.length ? kept.addresses : null,
    [SCIM_ENTERPRISE_USER_SCHEMA]: kept.enterprise,
  }) as ScimUserDoc;
}

export function scimUserResource(row: ScimUserRow, baseUrl: string) {
  const doc = scimUserDoc(row);
  return {
    schemas: doc[SCIM_ENTERPRISE_USER_SCHEMA] ? [SCIM_USER_SCHEMA, SCIM_ENTERPRISE_USER_SCHEMA] : [SCIM_USER_SCHEMA],
    id: row.id,
    ...doc,
    name: doc.name?.givenName && doc.name.familyName ? doc.name : { ...nameFromEmail(row.email), ...doc.name },
    meta: meta('User', row, `${baseUrl}/Users/${row.id}`),
  };
}

/**
 * The name shown for a user none was given to (an administrator from the CLI without names, a user
 * signed in by SAML before SCIM): the words of its e-mail's local part, the first as given name, the
 * rest (or the same word) as family name. Shown only: not stored, not filterable, and a PATCH or PUT
 * starts from the stored document, so the IdP's first name replaces it.
 */
export function nameFromEmail(email: string): { givenName: string; familyName: string } {
  const words = (email.split('@', 1)[0] ?? '')
    .split(/[._+-]+/)
    .filter((word) => word.length > 0)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1));
  const [givenName = email, ...rest] = words;
  return { givenName, familyName: rest.length > 0 ? rest.join(' ') : givenName };
}

export function scimGroupDoc(row: ScimGroupRow, members: readonly ScimGroupMemberRow[]): ScimGroupDoc {
  return withoutNulls({ displayName: row.display_name, externalId: row.external_id, members: members.map((member) => ({ value: member.user_id })) }) as ScimGroupDoc;
}

export function scimGroupResource(row: ScimGroupRow, members: readonly ScimGroupMemberRow[] | null, baseUrl: string) {
  return {
    schemas: [SCIM_GROUP_SCHEMA],
    id: row.id,
    displayName: row.display_name,
    ...(row.external_id === null ? {} : { externalId: row.external_id }),
    ...(members === null
      ? {}
      : { members: members.map((member) => ({ value: member.user_id, $ref: `${baseUrl}/Users/${member.user_id}`, display: member.display })) }),
    meta: meta('Group', row, `${baseUrl}/Groups/${row.id}`),
  };
}

function meta(resourceType: 'User' | 'Group', row: { version: number; created_at: string; updated_at: string }, location: string) {
  return { resourceType, created: row.created_at, lastModified: row.updated_at, location, version: etagOf(row.version) };
}

function withoutNulls<T extends Record<string, unknown>>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== null && entry !== undefined)) as Partial<T>;
}
