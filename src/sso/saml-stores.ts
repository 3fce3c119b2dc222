// Postgres implementations of the SAML core's two stores (tables saml_requests and saml_assertions,
// migrations/0006_sso.sql). Every process shares them, so a login started by one process can be
// finished by another. Each check-and-change is one statement, so two callbacks racing with the same
// response or request cannot both win. Expired rows are swept on the next write.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { AssertionReplayCache, SamlRequestStore } from './saml.ts';

/**
 * The outstanding-request store of one start or callback. `returnTo` (already allowlisted) is saved with
 * the request id; after a successful consume, `consumedReturnTo()` hands it back.
 */
export function postgresSamlRequestStore(pool: DatabasePool, returnTo: string | null = null): SamlRequestStore & { consumedReturnTo(): string | null } {
  let consumed: string | null = null;
  return {
    async save(requestId, employerId, expiresAt) {
      await pool.query(sql.unsafe`DELETE FROM saml_requests WHERE expires_at < now()`);
      await pool.query(sql.unsafe`
        INSERT INTO saml_requests (request_id, employer_id, return_to, expires_at)
        VALUES (${requestId}, ${employerId}, ${returnTo}, ${expiresAt.toISOString()})`);
    },
    async consume(requestId, employerId) {
      const row = await pool.maybeOne(sql.type(z.object({ return_to: z.string().nullable() }))`
        DELETE FROM saml_requests
        WHERE request_id = ${requestId} AND employer_id = ${employerId} AND expires_at > now()
        RETURNING return_to`);
      consumed = row?.return_to ?? null;
      return row !== null;
    },
    consumedReturnTo: () => consumed,
  };
}

export function postgresAssertionReplayCache(pool: DatabasePool): AssertionReplayCache {
  return {
    async remember(assertionId, employerId, until) {
      await pool.query(sql.unsafe`DELETE FROM saml_assertions WHERE expires_at < now()`);
      const inserted = await pool.maybeOne(sql.type(z.object({ assertion_id: z.string() }))`
        INSERT INTO saml_assertions (employer_id, assertion_id, expires_at)
        VALUES (${employerId}, ${assertionId}, ${until.toISOString()})
        ON CONFLICT DO NOTHING
        RETURNING assertion_id`);
      return inserted !== null;
    },
  };
}
