// SCIM reads on the read models `users` (tenants projection) and `groups`/`group_members`
// (projections/scim-groups.ts), and the SCIM representation of their rows. Every query is scoped to
// one employer; filters become SQL through filter.ts, so Postgres (and its indexes) does the matching.
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { SCIM_GROUP_SCHEMA, SCIM_USER_SCHEMA, type ScimGroupDoc, type ScimUserDoc } from './attributes.ts';
import { SCIM_MAX_RESULTS } from './discovery.ts';
import { scimFilterToSql, type ScimAttributeMap } from './filter.ts';

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
  'meta.created': { column: 'u.created_at', type: 'datetime' },
  'meta.lastmodified': { column: 'u.updated_at', type: 'datetime' },
};

export const GROUP_FILTER_ATTRIBUTES: ScimAttributeMap = {
  id: { column: 'g.id', type: 'string', caseExact: true },
  displayname: { column: 'g.display_name', type: 'string' },
  externalid: { column: 'g.external_id', type: 'string', caseExact: true },
  'members.value': {
    column: sql.fragment`ARRAY(SELECT m.user_id FROM group_members m WHERE m.group_id = g.id)`,
    type: 'string',
    caseExact: true,
    multiValued: true,
  },
  'meta.created': { column: 'g.created_at', type: 'datetime' },
  'meta.lastmodified': { column: 'g.updated_at', type: 'datetime' },
};

export type ListQuery = { filter?: string | undefined; startIndex: number; count: number };
export type Page<T> = { totalResults: number; startIndex: number; rows: T[] };

const emailSchema = z.object({ value: z.string(), type: z.string().optional(), primary: z.boolean().optional() });

const userRow = z.object({
  id: z.string(),
  user_name: z.string(),
  given_name: z.string().nullable(),
  family_name: z.string().nullable(),
  display_name: z.string().nullable(),
  external_id: z.string().nullable(),
  email: z.string(),
  emails: z.array(emailSchema),
  active: z.boolean(),
  version: z.coerce.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ScimUserRow = z.infer<typeof userRow>;

const USER_COLUMNS = sql.fragment`u.id, u.user_name, u.given_name, u.family_name, u.display_name, u.external_id, u.email, u.emails,
  u.active, u.version, u.created_at, u.updated_at`;

/** Users SCIM can see: every user of the employer except those deleted through SCIM. */
const visibleUsers = (employerId: string) => sql.fragment`u.employer_id = ${employerId} AND NOT u.scim_deleted`;

export async function findScimUser(pool: DatabasePool, employerId: string, userId: string): Promise<ScimUserRow | null> {
  return pool.maybeOne(sql.type(userRow)`SELECT ${USER_COLUMNS} FROM users u WHERE ${visibleUsers(employerId)} AND u.id = ${userId}`);
}

export async function listScimUsers(pool: DatabasePool, employerId: string, query: ListQuery): Promise<Page<ScimUserRow>> {
  return listPage(pool, {
    rowSchema: userRow,
    columns: USER_COLUMNS,
    from: sql.fragment`users u`,
    scope: visibleUsers(employerId),
    order: sql.fragment`u.created_at, u.id`,
    filter: query.filter === undefined ? null : scimFilterToSql(query.filter, USER_FILTER_ATTRIBUTES),
    query,
  });
}

/** Whether another visible user of the employer already has this userName (compared case-insensitively). */
export async function isUserNameTaken(pool: DatabasePool, employerId: string, userName: string, exceptUserId: string | null): Promise<boolean> {
  return pool.exists(sql.unsafe`
    SELECT 1 FROM users u WHERE ${visibleUsers(employerId)} AND lower(u.user_name) = lower(${userName})
      AND u.id IS DISTINCT FROM ${exceptUserId}`);
}

/** The ids among `userIds` that are not users SCIM can see in the employer. */
export async function unknownUserIds(pool: DatabasePool, employerId: string, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const known = new Set(
    await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT u.id FROM users u WHERE ${visibleUsers(employerId)} AND u.id = ANY(${sql.array([...userIds], 'text')})`),
  );
  return userIds.filter((id) => !known.has(id));
}

const groupRow = z.object({
  id: z.string(),
  display_name: z.string(),
  external_id: z.string().nullable(),
  version: z.coerce.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ScimGroupRow = z.infer<typeof groupRow>;

const GROUP_COLUMNS = sql.fragment`g.id, g.display_name, g.external_id, g.version, g.created_at, g.updated_at`;

export async function findScimGroup(pool: DatabasePool, employerId: string, groupId: string): Promise<ScimGroupRow | null> {
  return pool.maybeOne(sql.type(groupRow)`SELECT ${GROUP_COLUMNS} FROM groups g WHERE g.employer_id = ${employerId} AND g.id = ${groupId}`);
}

export async function listScimGroups(pool: DatabasePool, employerId: string, query: ListQuery): Promise<Page<ScimGroupRow>> {
  return listPage(pool, {
    rowSchema: groupRow,
    columns: GROUP_COLUMNS,
    from: sql.fragment`groups g`,
    scope: sql.fragment`g.employer_id = ${employerId}`,
    order: sql.fragment`g.created_at, g.id`,
    filter: query.filter === undefined ? null : scimFilterToSql(query.filter, GROUP_FILTER_ATTRIBUTES),
    query,
  });
}

export type ScimGroupMemberRow = { group_id: string; user_id: string; display: string };

const memberRow = z.object({ group_id: z.string(), user_id: z.string(), display: z.string() });

/** Members of the given groups, in the order they were added; users deleted through SCIM are left out. */
export async function groupMembers(pool: DatabasePool, employerId: string, groupIds: readonly string[]): Promise<Map<string, ScimGroupMemberRow[]>> {
  const byGroup = new Map<string, ScimGroupMemberRow[]>(groupIds.map((id) => [id, []]));
  if (groupIds.length === 0) return byGroup;
  const rows = await pool.any(sql.type(memberRow)`
    SELECT m.group_id, m.user_id, coalesce(u.display_name, u.user_name) AS display
    FROM group_members m JOIN users u ON u.id = m.user_id AND ${visibleUsers(employerId)}
    WHERE m.employer_id = ${employerId} AND m.group_id = ANY(${sql.array([...groupIds], 'text')})
    ORDER BY m.added_at, m.added_rank`);
  for (const row of rows) byGroup.get(row.group_id)?.push(row);
  return byGroup;
}

/**
 * One page in stable (created_at, id) order; the total comes with the rows (count(*) OVER ()), and
 * from a count of its own only when a page after the first, or of no rows (count=0), is empty.
 */
async function listPage<T extends z.ZodObject>(
  pool: DatabasePool,
  spec: { rowSchema: T; columns: FragmentSqlToken; from: FragmentSqlToken; scope: FragmentSqlToken; order: FragmentSqlToken; filter: FragmentSqlToken | null; query: ListQuery },
): Promise<Page<z.infer<T>>> {
  const where = spec.filter ? sql.fragment`${spec.scope} AND ${spec.filter}` : spec.scope;
  const startIndex = Math.max(1, spec.query.startIndex);
  const count = Math.min(Math.max(0, spec.query.count), SCIM_MAX_RESULTS);
  const rows = count === 0 ? [] : await pool.any(sql.type(spec.rowSchema.extend({ total_results: z.coerce.number() }))`
    SELECT ${spec.columns}, count(*) OVER () AS total_results FROM ${spec.from} WHERE ${where}
    ORDER BY ${spec.order} OFFSET ${startIndex - 1} LIMIT ${count}`);
  const first = rows[0] as { total_results: number } | undefined;
  // An empty first page means nothing matches (Okta's lookup before each create): no count needed.
  const totalResults = Number(
    first
      ? first.total_results
      : startIndex === 1 && count > 0
        ? 0
        : await pool.oneFirst(sql.type(z.object({ total: z.coerce.number() }))`SELECT count(*) AS total FROM ${spec.from} WHERE ${where}`),
  );
  return { totalResults, startIndex, rows: rows.map(({ total_results: _total, ...row }) => row as z.infer<T>) };
}

/** The version of a row as its weak ETag (meta.version and the ETag header). */
export function etagOf(version: number): string {
  return `W/"${version}"`;
}

/** The SCIM document of a user: from a `users` row, or from the user's stream (src/scim/commands.ts). */
export function scimUserDoc(row: Pick<ScimUserRow, 'user_name' | 'external_id' | 'active' | 'display_name' | 'given_name' | 'family_name' | 'emails'>): ScimUserDoc {
  const name = withoutNulls({ givenName: row.given_name, familyName: row.family_name });
  return withoutNulls({
    userName: row.user_name,
    externalId: row.external_id,
    active: row.active,
    displayName: row.display_name,
    name: Object.keys(name).length > 0 ? name : null,
    emails: row.emails,
  }) as ScimUserDoc;
}

export function scimUserResource(row: ScimUserRow, baseUrl: string) {
  return {
    schemas: [SCIM_USER_SCHEMA],
    id: row.id,
    ...scimUserDoc(row),
    meta: meta('User', row, `${baseUrl}/Users/${row.id}`),
  };
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
