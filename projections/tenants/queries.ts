// Queries on the users read model shared by capabilities (SAML sign-in, the CLI).
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

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
