// SMART clients as client management shows them, and what the token endpoint and the access-token
// cache read: a client's current keys and scopes, a token's grant (joined with its client, so a
// revoked client's tokens are found no more).
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { notFound } from '../../src/http/errors.ts';
import { pageOf, type Keyset } from '../../src/http/page.ts';
import { publicJwks } from '../../src/smart-clients/events.ts';

export const smartClientMetadata = z
  .object({
    clientId: z.string().meta({ description: 'The client id: iss and sub of its assertions.' }),
    name: z.string(),
    jwks: publicJwks.nullable().meta({ description: 'The JWK Set of public keys, when given inline.' }),
    jwksUrl: z.string().nullable().meta({ description: 'Where the key set is fetched from, when not inline.' }),
    scopes: z.array(z.string()).meta({ description: 'SMART system scopes the client may be granted.' }),
    status: z.enum(['active', 'revoked']),
    registeredAt: z.string(),
    registeredBy: z.string(),
    keysUpdatedAt: z.string(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'SmartClient' });
export type SmartClientMetadata = z.infer<typeof smartClientMetadata>;

const clientRow = z.object({
  client_id: z.string(),
  employer_id: z.string(),
  name: z.string(),
  jwks: publicJwks.nullable(),
  jwks_url: z.string().nullable(),
  scopes: z.array(z.string()),
  registered_at: z.string(),
  registered_by: z.string(),
  keys_updated_at: z.string(),
  revoked_at: z.string().nullable(),
  cursor_at: z.string(),
});
type ClientRow = z.infer<typeof clientRow>;

const selectClients = sql.fragment`
  SELECT client_id, employer_id, name, jwks, jwks_url, scopes, registered_at, registered_by, keys_updated_at, revoked_at, registered_at::text AS cursor_at
  FROM smart_clients`;

const toMetadata = (row: ClientRow): SmartClientMetadata => ({
  clientId: row.client_id,
  name: row.name,
  jwks: row.jwks,
  jwksUrl: row.jwks_url,
  scopes: row.scopes,
  status: row.revoked_at === null ? 'active' : 'revoked',
  registeredAt: new Date(row.registered_at).toISOString(),
  registeredBy: row.registered_by,
  keysUpdatedAt: new Date(row.keys_updated_at).toISOString(),
  revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at).toISOString(),
});

/** One page of the employer's clients, newest first, revoked ones included. */
export async function listSmartClients(pool: DatabasePool, employerId: string, { limit, after }: { limit: number; after: Keyset | null }) {
  const rows = await pool.any(sql.type(clientRow)`
    ${selectClients} WHERE employer_id = ${employerId}
      ${after ? sql.fragment`AND (registered_at, client_id) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
    ORDER BY registered_at DESC, client_id DESC LIMIT ${limit + 1}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.client_id }));
  return { clients: page.map(toMetadata), next };
}

/** One client of the employer; 404 for another employer's, as for none. */
export async function getSmartClient(pool: DatabasePool, employerId: string, clientId: string): Promise<SmartClientMetadata> {
  const row = await pool.maybeOne(sql.type(clientRow)`${selectClients} WHERE employer_id = ${employerId} AND client_id = ${clientId}`);
  if (!row) throw notFound('SMART client');
  return toMetadata(row);
}

/** The active client `clientId` (any employer: the token endpoint knows the client by its id alone), or null. */
export async function activeSmartClient(pool: DatabasePool, clientId: string) {
  const row = await pool.maybeOne(sql.type(clientRow)`${selectClients} WHERE client_id = ${clientId} AND revoked_at IS NULL`);
  return row && { clientId: row.client_id, employerId: row.employer_id, jwks: row.jwks, jwksUrl: row.jwks_url, scopes: row.scopes };
}

const tokenRow = z.object({ employer_id: z.string(), client_id: z.string(), scopes: z.array(z.string()), expires_at: z.number() });

/** The grant of the access token whose SHA-256 is `tokenHash`, while its client is active; null otherwise. */
export async function findAccessToken(pool: DatabasePool, tokenHash: string) {
  const row = await pool.maybeOne(sql.type(tokenRow)`
    SELECT t.employer_id, t.client_id, t.scopes, (extract(epoch FROM t.expires_at) * 1000)::float8 AS expires_at
    FROM smart_access_tokens t JOIN smart_clients c ON c.client_id = t.client_id
    WHERE t.token_hash = ${tokenHash} AND c.revoked_at IS NULL`);
  return row && { employerId: row.employer_id, clientId: row.client_id, scopes: row.scopes, expiresAt: row.expires_at };
}
