// SCIM's reads of the read models `groups` and `group_members` (projections/scim-groups/projection.ts),
// joined with the users SCIM can see (projections/tenants/queries.ts). Every query is scoped to one
// employer; a SCIM filter arrives already translated to SQL on the alias `g` used here.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { listPage, type ListQuery, type Page } from '../scim-list-page.ts';
import { scimVisibleUsers } from '../tenants/queries.ts';

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

/**
 * The groups `scimGroups` names (by id, or by displayName without case): the SCIM groups an employer
 * maps to the administrator role (src/tenants/events.ts, adminRoleMapping).
 */
const namedGroups = (employerId: string, scimGroups: readonly string[]) => sql.fragment`
  g.employer_id = ${employerId}
  AND (g.id = ANY(${sql.array([...scimGroups], 'text')}) OR lower(g.display_name) = ANY(${sql.array(scimGroups.map((name) => name.toLowerCase()), 'text')}))`;

/** Whether the user is a member of one of the named groups (other than `exceptGroupId`, when given). */
export async function isMemberOfNamedGroups(pool: DatabasePool, employerId: string, userId: string, scimGroups: readonly string[], exceptGroupId: string | null): Promise<boolean> {
  const except = exceptGroupId === null ? sql.fragment`` : sql.fragment`AND g.id <> ${exceptGroupId}`;
  return pool.exists(sql.unsafe`
    SELECT 1 FROM group_members m JOIN groups g ON g.id = m.group_id
    WHERE ${namedGroups(employerId, scimGroups)} AND m.user_id = ${userId} ${except}`);
}

/** Ids of the members of the named groups, each once. */
export async function membersOfNamedGroups(pool: DatabasePool, employerId: string, scimGroups: readonly string[]): Promise<readonly string[]> {
  return pool.anyFirst(sql.type(z.object({ user_id: z.string() }))`
    SELECT DISTINCT m.user_id FROM group_members m JOIN groups g ON g.id = m.group_id
    WHERE ${namedGroups(employerId, scimGroups)} ORDER BY m.user_id`);
}

export type ScimGroupMemberRow = { group_id: string; user_id: string; display: string };

const memberRow = z.object({ group_id: z.string(), user_id: z.string(), display: z.string() });

/** Members of the given groups, in the order they were added; users deleted through SCIM are left out. */
export async function groupMembers(pool: DatabasePool, employerId: string, groupIds: readonly string[]): Promise<Map<string, ScimGroupMemberRow[]>> {
  const byGroup = new Map<string, ScimGroupMemberRow[]>(groupIds.map((id) => [id, []]));
  if (groupIds.length === 0) return byGroup;
  const rows = await pool.any(sql.type(memberRow)`
    SELECT m.group_id, m.user_id, coalesce(u.display_name, u.user_name) AS display
    FROM group_members m JOIN users u ON u.id = m.user_id AND ${scimVisibleUsers(employerId)}
    WHERE m.employer_id = ${employerId} AND m.group_id = ANY(${sql.array([...groupIds], 'text')})
    ORDER BY m.added_at, m.added_rank`);
  for (const row of rows) byGroup.get(row.group_id)?.push(row);
  return byGroup;
}
