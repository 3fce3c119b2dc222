// What the operational jobs read: allowlist rejections (operational table), the api_keys and users
// read models. Every query names its employer, or groups by employer.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { activeApiKey } from '../../projections/api-keys/queries.ts';

const rejectionRow = z.object({ employer_id: z.string(), key_id: z.string(), key_name: z.string().nullable(), ip: z.string(), rejections: z.number() });

/** API_KEY_IP_NOT_ALLOWED rejections per employer, key and address in [from, to), most first. */
export async function ipRejectionsBetween(db: CommonQueryMethods, from: Date, to: Date) {
  return db.any(sql.type(rejectionRow)`
    SELECT r.employer_id, r.key_id, k.name AS key_name, r.ip, sum(r.rejections)::float8 AS rejections
    FROM api_key_ip_rejections r LEFT JOIN api_keys k ON k.id = r.key_id AND k.employer_id = r.employer_id
    WHERE r.minute >= ${from.toISOString()}::timestamptz AND r.minute < ${to.toISOString()}::timestamptz
    GROUP BY r.employer_id, r.key_id, k.name, r.ip
    ORDER BY r.employer_id, rejections DESC, r.key_id, r.ip`);
}

const keyRow = z.object({ id: z.string(), name: z.string(), expires_at: z.string().nullable(), created_at: z.string(), last_used_at: z.string().nullable() });

/** The employer's keys active at `now` (projections/api-keys/queries.ts, activeApiKey) with their last use. */
export async function activeKeysOf(db: CommonQueryMethods, employerId: string, now: Date) {
  return db.any(sql.type(keyRow)`
    SELECT k.id, k.name, k.expires_at, k.created_at, u.last_used_at
    FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id
    WHERE k.employer_id = ${employerId} AND ${activeApiKey(now.toISOString())}
    ORDER BY k.created_at, k.id`);
}

export async function allEmployerIds(db: CommonQueryMethods): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id FROM employers ORDER BY id`);
}

/** E-mail addresses of the employer's active admins. */
export async function adminEmailsOf(db: CommonQueryMethods, employerId: string): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ email: z.string() }))`
    SELECT email FROM users WHERE employer_id = ${employerId} AND role = 'EMPLOYER_ADMIN' AND active ORDER BY email`);
}
