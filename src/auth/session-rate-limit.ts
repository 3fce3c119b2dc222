// The rate limit of session-authenticated calls: SESSION_RATE_LIMIT_PER_MIN per signed-in user (or
// per session: SESSION_RATE_LIMIT_BY), a token bucket in each API process's memory, as the FHIR limit
// is: a minute's calls at once, then the per-minute rate. Past it, 429 RATE_LIMITED with retry-after.
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../app-context.ts';
import { assertAllowed, createTokenBuckets, type TokenBuckets } from '../http/token-buckets.ts';

/** One set of buckets per running service (a test process may run several). */
const bucketsOf = new WeakMap<AppContext, TokenBuckets>();

export function assertSessionCallAllowed(ctx: AppContext, session: { userId: string; sessionId: string }, reply: FastifyReply): void {
  let buckets = bucketsOf.get(ctx);
  if (!buckets) {
    const limit = ctx.config.SESSION_RATE_LIMIT_PER_MIN;
    buckets = createTokenBuckets({ perSecond: limit / 60, burst: limit });
    bucketsOf.set(ctx, buckets);
  }
  const bySession = ctx.config.SESSION_RATE_LIMIT_BY === 'session';
  const key = bySession ? `session:${session.sessionId}` : `user:${session.userId}`;
  assertAllowed(buckets.take(key), reply, bySession ? 'Too many calls in this session' : 'Too many calls by this user');
}
