// What the hourly alerts read of the allowlist rejections (an operational table the API-key pipeline
// writes, src/api-keys/usage-recorder.ts), with each key's name. Grouped by employer.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

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
