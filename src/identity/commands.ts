// Sign-in links and sessions: issuing a link, exchanging it once for a session, ending sessions.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';
import { handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { sessionDecider, sessionStream, type SessionEndReason } from './session.ts';
import { signInTokenDecider, signInTokenStream } from './signin-token.ts';

export const SIGNIN_PATH = '/api/auth/signin';

export async function issueSignInToken(ctx: AppContext, input: { employerId: string; userId: string; via: 'cli' | 'saml'; context: CommandContext }) {
  const token = randomToken();
  const tokenId = randomUUID();
  const expiresAt = new Date(Date.now() + ctx.config.SIGNIN_TOKEN_TTL_MINUTES * 60_000).toISOString();
  await handleCommand(ctx.commands, {
    streamName: signInTokenStream(input.employerId, tokenId),
    decider: signInTokenDecider,
    command: { type: 'IssueSignInToken', tokenId, userId: input.userId, tokenHash: sha256Hex(token), expiresAt, via: input.via },
    context: input.context,
    newStream: true,
  });
  return { token, expiresAt, signInUrl: `${ctx.config.PUBLIC_BASE_URL}${SIGNIN_PATH}?token=${encodeURIComponent(token)}` };
}

const tokenRow = z.object({ token_id: z.string(), employer_id: z.string(), user_id: z.string(), user_active: z.boolean() });

/** Exchanges a sign-in token for a new session; the raw session secret goes into the cookie only. */
export async function redeemSignInToken(ctx: AppContext, rawToken: string) {
  const invalid = new DomainError(401, 'INVALID_SIGNIN_TOKEN', 'The sign-in link is invalid, expired or already used.');
  const row = await ctx.db.slonik.maybeOne(sql.type(tokenRow)`
    SELECT t.token_id, t.employer_id, t.user_id, u.active AS user_active
    FROM signin_tokens t JOIN users u ON u.id = t.user_id AND u.employer_id = t.employer_id
    WHERE t.token_hash = ${sha256Hex(rawToken)}`);
  if (!row) throw invalid;
  if (!row.user_active) throw new DomainError(403, 'USER_DEACTIVATED', 'This user is deactivated.');
  const sessionId = randomUUID();
  const context: CommandContext = { tenantId: row.employer_id, actor: { type: 'user', id: row.user_id } };
  await handleCommand(ctx.commands, {
    streamName: signInTokenStream(row.employer_id, row.token_id),
    decider: signInTokenDecider,
    command: { type: 'RedeemSignInToken', sessionId, now: new Date().toISOString() },
    context,
  });
  const sessionSecret = randomToken();
  const expiresAt = new Date(Date.now() + ctx.config.SESSION_TTL_HOURS * 3_600_000).toISOString();
  await handleCommand(ctx.commands, {
    streamName: sessionStream(row.employer_id, sessionId),
    decider: sessionDecider,
    command: { type: 'StartSession', sessionId, userId: row.user_id, sessionHash: sha256Hex(sessionSecret), expiresAt },
    context,
    newStream: true,
  });
  return { sessionSecret, sessionId, expiresAt, employerId: row.employer_id, userId: row.user_id };
}

export async function endSession(ctx: AppContext, employerId: string, sessionId: string, reason: SessionEndReason, context: CommandContext) {
  await handleCommand(ctx.commands, { streamName: sessionStream(employerId, sessionId), decider: sessionDecider, command: { type: 'EndSession', reason }, context });
}

/** Ends every open session of a user (deactivation). */
export async function endUserSessions(ctx: AppContext, employerId: string, userId: string, context: CommandContext) {
  const sessionIds = await ctx.db.slonik.anyFirst(sql.type(z.object({ session_id: z.string() }))`
    SELECT session_id FROM sessions WHERE employer_id = ${employerId} AND user_id = ${userId} AND ended_at IS NULL`);
  for (const sessionId of sessionIds) await endSession(ctx, employerId, sessionId, 'user_deactivated', context);
}

type SessionRow = { session_id: string; employer_id: string; user_id: string; role: string; email: string; expires_at: Date };

/**
 * The live session behind a cookie secret, or null (unknown, ended, expired, or user deactivated).
 * Every cookie-authenticated request runs it: a named pg statement, like the other hot reads
 * (ARCHITECTURE.md, "Reads at the hardware's pace").
 */
export async function findActiveSession(ctx: AppContext, sessionSecret: string): Promise<SessionRow | null> {
  const { rows } = await ctx.db.pg.query<SessionRow>({
    name: 'sessions.find-active',
    text: `SELECT s.session_id, s.employer_id, s.user_id, u.role, u.email, s.expires_at
           FROM sessions s JOIN users u ON u.id = s.user_id AND u.employer_id = s.employer_id
           WHERE s.session_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now() AND u.active`,
    values: [sha256Hex(sessionSecret)],
  });
  return rows[0] ?? null;
}
