// Sign-in links and sessions: issuing a link, exchanging it once for a session, ending sessions.
import { randomUUID } from 'node:crypto';
import { findSignInToken, openSessionIds } from '../../projections/identity/queries.ts';
import type { AppContext } from '../app-context.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import type { SessionEndReason } from './events.ts';
import { sessionDecider, sessionStream } from './session.ts';
import { invalidSignInToken, signInTokenDecider, signInTokenStream } from './signin-token.ts';

export const SIGNIN_PATH = '/api/auth/signin';

export async function issueSignInToken(ctx: AppContext, context: CommandContext, input: { userId: string; via: 'cli' | 'saml' }) {
  const token = randomToken();
  const tokenId = randomUUID();
  const expiresAt = new Date(Date.now() + ctx.config.SIGNIN_TOKEN_TTL_MINUTES * 60_000).toISOString();
  await handleCommand(ctx.commands, {
    streamName: signInTokenStream(employerOf(context), tokenId),
    decider: signInTokenDecider,
    command: { type: 'IssueSignInToken', tokenId, userId: input.userId, tokenHash: sha256Hex(token), expiresAt, via: input.via },
    context,
    newStream: true,
  });
  return { token, expiresAt, signInUrl: `${ctx.config.PUBLIC_BASE_URL}${SIGNIN_PATH}?token=${encodeURIComponent(token)}` };
}

const deactivated = () => new DomainError('forbidden', 'USER_DEACTIVATED', 'This user is deactivated.');

/**
 * Whom a sign-in token would sign in, without using it up (the confirmation page a GET of the link
 * shows); the same refusals as the exchange itself.
 */
export async function inspectSignInToken(ctx: AppContext, input: { token: string }): Promise<{ email: string }> {
  const row = await findSignInToken(ctx.db.slonik, sha256Hex(input.token));
  if (!row?.usable) throw invalidSignInToken();
  if (!row.user_active) throw deactivated();
  return { email: row.email };
}

/**
 * Exchanges a sign-in token for a new session; the raw session secret goes into the cookie only. The
 * one command without a caller's context: the caller is anonymous until the token names its user,
 * who is then the actor.
 */
export async function redeemSignInToken(ctx: AppContext, input: { token: string }) {
  const row = await findSignInToken(ctx.db.slonik, sha256Hex(input.token));
  if (!row) throw invalidSignInToken();
  if (!row.user_active) throw deactivated();
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

export async function endSession(ctx: AppContext, context: CommandContext, input: { sessionId: string; reason: SessionEndReason }) {
  await handleCommand(ctx.commands, {
    streamName: sessionStream(employerOf(context), input.sessionId),
    decider: sessionDecider,
    command: { type: 'EndSession', reason: input.reason },
    context,
  });
}

/** Ends every open session of a user (deactivation, the administrator role taken away, a SAML Single Logout from the IdP). */
export async function endUserSessions(ctx: AppContext, context: CommandContext, input: { userId: string; reason: SessionEndReason }) {
  const sessionIds = await openSessionIds(ctx.db.slonik, employerOf(context), input.userId);
  for (const sessionId of sessionIds) await endSession(ctx, context, { sessionId, reason: input.reason });
}
