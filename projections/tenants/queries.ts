// Queries on the read models `employers` and `users`: SAML sign-in and the CLI find a user by e-mail, a
// patient's FHIR compartment starts from its user's e-mail,
// the operational jobs and mails go through the employers and their admins, SCIM reads the users it
// can see (a SCIM filter arrives already translated to SQL on the alias `u`).
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { adminRoleMapping, NO_ADMIN_ROLE_MAPPING, scimProfileAttributesSchema, userEmail, type AdminRoleMapping } from '../../src/tenants/events.ts';
import { listPage, type ListQuery, type Page } from '../scim-list-page.ts';

const userRow = z.object({ id: z.string(), employer_id: z.string(), active: z.boolean() });

/**
 * The user holding `email` in any employer (addresses are unique across employers), or null. Users
 * deleted through SCIM keep their address on record without holding it: the one that holds it comes
 * first, else the most recently deleted (which is inactive, so refused).
 */
export async function findUserByEmail(pool: DatabasePool, email: string) {
  return pool.maybeOne(sql.type(userRow)`
    SELECT id, employer_id, active FROM users WHERE lower(email) = lower(${email}) ORDER BY scim_deleted, updated_at DESC LIMIT 1`);
}

export async function employerExists(pool: DatabasePool, employerId: string): Promise<boolean> {
  return pool.exists(sql.unsafe`SELECT 1 FROM employers WHERE id = ${employerId}`);
}

export async function allEmployerIds(db: CommonQueryMethods): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM employers ORDER BY id`);
}

/** The e-mail address of one of the employer's users, or null. */
export async function userEmailOf(db: CommonQueryMethods, employerId: string, userId: string): Promise<string | null> {
  return db.maybeOneFirst(sql.type(z.object({ email: z.string() }))`SELECT email FROM users WHERE employer_id = ${employerId} AND id = ${userId}`);
}

/** Ids of the employer's active admins. */
export async function adminIdsOf(db: CommonQueryMethods, employerId: string): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM users WHERE employer_id = ${employerId} AND role = 'EMPLOYER_ADMIN' AND active ORDER BY id`);
}

/** The employer's mapping of IdP groups to the administrator role (none for an unknown employer). */
export async function adminRoleMappingOf(db: CommonQueryMethods, employerId: string): Promise<AdminRoleMapping> {
  const mapping = await db.maybeOneFirst(sql.type(z.object({ admin_role_mapping: adminRoleMapping }))`
    SELECT admin_role_mapping FROM employers WHERE id = ${employerId}`);
  return mapping ?? NO_ADMIN_ROLE_MAPPING;
}

/** E-mail addresses of the employer's active admins. */
export async function adminEmailsOf(db: CommonQueryMethods, employerId: string): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ email: z.string() }))`
    SELECT email FROM users WHERE employer_id = ${employerId} AND role = 'EMPLOYER_ADMIN' AND active ORDER BY email`);
}

const scimUserRow = z.object({
  id: z.string(),
  user_name: z.string(),
  given_name: z.string().nullable(),
  family_name: z.string().nullable(),
  display_name: z.string().nullable(),
  external_id: z.string().nullable(),
  email: z.string(),
  emails: z.array(userEmail),
  scim_attributes: scimProfileAttributesSchema,
  active: z.boolean(),
  version: z.coerce.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ScimUserRow = z.infer<typeof scimUserRow>;

const USER_COLUMNS = sql.fragment`u.id, u.user_name, u.given_name, u.family_name, u.display_name, u.external_id, u.email, u.emails,
  u.scim_attributes, u.active, u.version, u.created_at, u.updated_at`;

/** Users SCIM can see: every user of the employer except those deleted through SCIM. */
export const scimVisibleUsers = (employerId: string) => sql.fragment`u.employer_id = ${employerId} AND NOT u.scim_deleted`;

export async function findScimUser(pool: DatabasePool, employerId: string, userId: string): Promise<ScimUserRow | null> {
  return pool.maybeOne(sql.type(scimUserRow)`SELECT ${USER_COLUMNS} FROM users u WHERE ${scimVisibleUsers(employerId)} AND u.id = ${userId}`);
}

export async function listScimUsers(pool: DatabasePool, employerId: string, query: ListQuery): Promise<Page<ScimUserRow>> {
  return listPage(pool, {
    rowSchema: scimUserRow,
    columns: USER_COLUMNS,
    from: sql.fragment`users u`,
    scope: scimVisibleUsers(employerId),
    order: sql.fragment`u.created_at, u.id`,
    query,
  });
}

/** Whether another visible user of the employer already has this userName (compared case-insensitively). */
export async function isUserNameTaken(pool: DatabasePool, employerId: string, userName: string, exceptUserId: string | null): Promise<boolean> {
  return pool.exists(sql.unsafe`
    SELECT 1 FROM users u WHERE ${scimVisibleUsers(employerId)} AND lower(u.user_name) = lower(${userName})
      AND u.id IS DISTINCT FROM ${exceptUserId}`);
}

/** The ids among `userIds` that are not users SCIM can see in the employer. */
export async function unknownUserIds(pool: DatabasePool, employerId: string, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const known = new Set(
    await pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      SELECT u.id FROM users u WHERE ${scimVisibleUsers(employerId)} AND u.id = ANY(${sql.array([...userIds], 'text')})`),
  );
  return userIds.filter((id) => !known.has(id));
}
