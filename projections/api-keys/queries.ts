// Key metadata as key management and the inventory review show it (the read model joined with the
// usage telemetry), the keys the request pipeline checks, and the one rule of a key's status
// (apiKeyStatus), derived when read.
import { sql, type CommonQueryMethods, type DatabasePool, type FragmentSqlToken, type ValueExpression } from 'slonik';
import { z } from 'zod';
import { SCOPES } from '../../src/auth/principal.ts';
import { notFound } from '../../src/http/errors.ts';
import { pageOf, type Keyset } from '../../src/http/page.ts';

export const API_KEY_STATUSES = ['active', 'revoked', 'expired', 'inactive'] as const;

/**
 * The status of the key `k` (an api_keys row) at the instant `at` (an ISO string, or the database's
 * sql.fragment`now()`): revoked (by DELETE, or from the end of a roll's overlap on), else expired from
 * the instant expiresAt on, else inactive while suspended, else active. Key management shows it; the monthly inventory review (activeKeysOf) and
 * the employer report count the active keys by it (activeApiKey).
 */
export function apiKeyStatus(at: ValueExpression): FragmentSqlToken {
  return sql.fragment`CASE WHEN ${revokedAt(at)} IS NOT NULL THEN 'revoked' WHEN k.expires_at <= (${at})::timestamptz THEN 'expired'
    WHEN k.suspended THEN 'inactive' ELSE 'active' END`;
}

/** When the key `k` was revoked, as seen at `at`: by DELETE, or by the end of a roll's overlap once it passed. */
function revokedAt(at: ValueExpression): FragmentSqlToken {
  return sql.fragment`COALESCE(k.revoked_at, CASE WHEN k.roll_revokes_at <= (${at})::timestamptz THEN k.roll_revokes_at END)`;
}

/** Whether the key `k` is active at `at` (apiKeyStatus). */
export function activeApiKey(at: ValueExpression): FragmentSqlToken {
  return sql.fragment`${apiKeyStatus(at)} = 'active'`;
}

export const apiKeyMetadata = z
  .object({
    id: z.string(),
    name: z.string(),
    keyPrefix: z.string().meta({ description: 'The first 8 hex characters after mt_live_, to recognise a key; not enough to use it.' }),
    scopes: z.array(z.enum(SCOPES)),
    allowedIpCidrs: z.array(z.string()),
    expiresAt: z.string().nullable(),
    rateLimitPerMinute: z.number().int().nullable().meta({ description: 'Requests per minute; null means the service default.' }),
    createdAt: z.string(),
    createdBy: z.string().meta({ description: 'Id of the user who created the key. Deactivating that user through SCIM revokes it.' }),
    status: z.enum(API_KEY_STATUSES),
    revokedAt: z.string().nullable(),
    rolledInto: z.string().nullable().meta({ description: 'The key that replaced this one (POST .../roll); it is revoked at revokesAt.' }),
    revokesAt: z.string().nullable().meta({ description: 'While a rolled key\'s overlap lasts: when it ends and the key is revoked. Null otherwise.' }),
    lastUsedAt: z.string().nullable(),
    lastUsedIp: z.string().nullable(),
    requestCount: z.number().int(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyMetadata = z.infer<typeof apiKeyMetadata>;

const metadataRow = z.object({
  id: z.string(),
  name: z.string(),
  key_prefix: z.string(),
  scopes: z.array(z.string()),
  allowed_ip_cidrs: z.array(z.string()),
  expires_at: z.string().nullable(),
  rate_limit_per_minute: z.number().nullable(),
  created_at: z.string(),
  created_by: z.string(),
  status: z.enum(API_KEY_STATUSES),
  revoked_at: z.string().nullable(),
  rolled_into: z.string().nullable(),
  revokes_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
  last_used_ip: z.string().nullable(),
  request_count: z.number(),
  // created_at to the microsecond, for the list's cursor.
  cursor_at: z.string(),
});

/** The keys' metadata, each key's status as it is at `now` (ms since the epoch). */
const selectMetadata = (now: number) => sql.fragment`
  SELECT k.id, k.name, k.key_prefix, k.scopes, k.allowed_ip_cidrs, k.expires_at, k.rate_limit_per_minute, k.created_at, k.created_by,
         ${apiKeyStatus(new Date(now).toISOString())} AS status, ${revokedAt(new Date(now).toISOString())} AS revoked_at, k.rolled_into,
         CASE WHEN k.revoked_at IS NULL AND k.roll_revokes_at > ${new Date(now).toISOString()}::timestamptz THEN k.roll_revokes_at END AS revokes_at,
         k.created_at::text AS cursor_at,
         u.last_used_at, u.last_used_ip, COALESCE(u.request_count, 0)::float8 AS request_count
  FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id`;

function toMetadata(row: z.infer<typeof metadataRow>): ApiKeyMetadata {
  return apiKeyMetadata.parse({
    id: row.id,
    name: row.name,
    keyPrefix: row.key_prefix,
    scopes: row.scopes,
    allowedIpCidrs: row.allowed_ip_cidrs,
    expiresAt: row.expires_at,
    rateLimitPerMinute: row.rate_limit_per_minute,
    createdAt: row.created_at,
    createdBy: row.created_by,
    status: row.status,
    revokedAt: row.revoked_at,
    rolledInto: row.rolled_into,
    revokesAt: row.revokes_at,
    lastUsedAt: row.last_used_at,
    lastUsedIp: row.last_used_ip,
    requestCount: row.request_count,
  });
}

/** One page of the employer's keys, newest first, revoked ones included (index api_keys_by_employer). */
export async function listApiKeys(
  pool: DatabasePool,
  employerId: string,
  now: number,
  { limit, after }: { limit: number; after: Keyset | null },
): Promise<{ keys: ApiKeyMetadata[]; next: Keyset | null }> {
  const rows = await pool.any(sql.type(metadataRow)`
    ${selectMetadata(now)}
    WHERE k.employer_id = ${employerId}
      ${after ? sql.fragment`AND (k.created_at, k.id) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
    ORDER BY k.created_at DESC, k.id DESC LIMIT ${limit + 1}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.id }));
  return { keys: page.map(toMetadata), next };
}

/** One key of the employer; 404 for a key of another employer, exactly as for no key at all. */
export async function getApiKey(pool: DatabasePool, employerId: string, keyId: string, now: number): Promise<ApiKeyMetadata> {
  const row = await pool.maybeOne(sql.type(metadataRow)`${selectMetadata(now)} WHERE k.employer_id = ${employerId} AND k.id = ${keyId}`);
  if (!row) throw notFound('API key');
  return toMetadata(row);
}


const activeKeyRow = z.object({ id: z.string(), name: z.string(), expires_at: z.string().nullable(), created_at: z.string(), last_used_at: z.string().nullable() });

/** The employer's keys active at `now` with their last use (the monthly inventory review). */
export async function activeKeysOf(db: CommonQueryMethods, employerId: string, now: Date) {
  return db.any(sql.type(activeKeyRow)`
    SELECT k.id, k.name, k.expires_at, k.created_at, u.last_used_at
    FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id
    WHERE k.employer_id = ${employerId} AND ${activeApiKey(now.toISOString())}
    ORDER BY k.created_at, k.id`);
}

const keyRow = z.object({
  id: z.string(),
  employer_id: z.string(),
  key_hash: z.string(),
  scopes: z.array(z.string()),
  allowed_ip_cidrs: z.array(z.string()),
  expires_at: z.string().nullable(),
  suspended: z.boolean(),
  revoked_at: z.string().nullable(),
  roll_revokes_at: z.string().nullable(),
  creator_active: z.boolean(),
  created_by: z.string(),
  rate_limit_per_minute: z.number().nullable(),
});

/** What the request pipeline checks of the key whose hash is `keyHash` (the key cache's loader). */
/** The hash of every key, in any state (the pipeline's cache tells real keys from guesses by them). */
export async function allKeyHashes(pool: DatabasePool): Promise<readonly string[]> {
  return pool.anyFirst(sql.type(z.object({ key_hash: z.string() }))`SELECT key_hash FROM api_keys`);
}

export async function findKeyByHash(pool: DatabasePool, keyHash: string) {
  return pool.maybeOne(sql.type(keyRow)`
    SELECT id, employer_id, key_hash, scopes, allowed_ip_cidrs, expires_at, suspended, revoked_at, roll_revokes_at, creator_active, created_by, rate_limit_per_minute
    FROM api_keys WHERE key_hash = ${keyHash}`);
}
