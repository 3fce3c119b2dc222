// Reads of the identity read model (`signin_tokens`, `sessions`, joined with `users`): the sign-in
// exchange, every cookie check, and the sessions a deactivation ends.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type pg from 'pg';
import type { Role } from '../../src/auth/principal.ts';
import { notFound } from '../../src/http/errors.ts';

const row = z.object({ email: z.string(), expires_at: z.string() });

export async function findActiveSessionById(pool: DatabasePool, employerId: string, sessionId: string) {
  const found = await pool.maybeOne(sql.type(row)`
    SELECT u.email, s.expires_at FROM sessions s JOIN users u ON u.id = s.user_id
    WHERE s.employer_id = ${employerId} AND s.session_id = ${sessionId}`);
  if (!found) throw notFound('Session');
  return found;
}

const tokenRow = z.object({ token_id: z.string(), employer_id: z.string(), user_id: z.string(), user_active: z.boolean(), email: z.string(), usable: z.boolean() });

/**
 * The sign-in token whose hash is `tokenHash`, with its user's e-mail, whether the user is active and
 * whether the token is usable (neither redeemed nor expired, as the read model has it: the token's
 * decider has the last word); null when unknown.
 */
export async function findSignInToken(pool: DatabasePool, tokenHash: string) {
  return pool.maybeOne(sql.type(tokenRow)`
    SELECT t.token_id, t.employer_id, t.user_id, u.active AS user_active, u.email, (t.redeemed_at IS NULL AND t.expires_at > now()) AS usable
    FROM signin_tokens t JOIN users u ON u.id = t.user_id AND u.employer_id = t.employer_id
    WHERE t.token_hash = ${tokenHash}`);
}

/** Ids of a user's sessions that have not ended. */
export async function openSessionIds(pool: DatabasePool, employerId: string, userId: string): Promise<readonly string[]> {
  return pool.anyFirst(sql.type(z.object({ session_id: z.string() }))`
    SELECT session_id FROM sessions WHERE employer_id = ${employerId} AND user_id = ${userId} AND ended_at IS NULL`);
}

export type ActiveSession = { session_id: string; employer_id: string; user_id: string; role: Role; email: string; expires_at: Date };

/**
 * The live session whose secret hashes to `sessionHash`, or null (unknown, ended, expired, or user
 * deactivated). Every cookie-authenticated request runs it: a named pg statement, like the other hot
 * reads (ARCHITECTURE.md, HTTP).
 */
export async function findActiveSession(pool: pg.Pool, sessionHash: string): Promise<ActiveSession | null> {
  const { rows } = await pool.query<ActiveSession>({
    name: 'sessions.find-active',
    text: `SELECT s.session_id, s.employer_id, s.user_id, u.role, u.email, s.expires_at
           FROM sessions s JOIN users u ON u.id = s.user_id AND u.employer_id = s.employer_id
           WHERE s.session_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now() AND u.active`,
    values: [sessionHash],
  });
  return rows[0] ?? null;
}
