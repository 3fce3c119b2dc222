// SCIM's reads of the read models `users` (projections/tenants/) and `groups`/`group_members`
// (projections/scim-groups/projection.ts). Every query is scoped to one employer; a SCIM filter arrives
// already translated to SQL (src/scim/filter.ts, on the aliases `u` and `g` used here), so Postgres
// (and its indexes) does the matching.
import { sql, type DatabasePool, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

/** `filter`: the SCIM filter as SQL on the query's alias; `count`: at most this many rows. */
export type ListQuery = { filter: FragmentSqlToken | null; startIndex: number; count: number };
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
  spec: { rowSchema: T; columns: FragmentSqlToken; from: FragmentSqlToken; scope: FragmentSqlToken; order: FragmentSqlToken; query: ListQuery },
): Promise<Page<z.infer<T>>> {
  const where = spec.query.filter ? sql.fragment`${spec.scope} AND ${spec.query.filter}` : spec.scope;
  const startIndex = Math.max(1, spec.query.startIndex);
  const count = Math.max(0, spec.query.count);
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
