// The built-in identity provider's browser endpoints: sign-in link exchange, current session, logout.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf, ROLES } from '../auth/principal.ts';
import { SESSION_COOKIE } from '../auth/authenticate.ts';
import { defineRoute } from '../http/route.ts';
import { normaliseReturnTo } from '../sso/return-to.ts';
import { TOKEN_MAX, URL_MAX } from '../http/limits.ts';
import { endSession, redeemSignInToken, SIGNIN_PATH } from './commands.ts';
import { findActiveSessionById } from '../../projections/identity/queries.ts';

const sessionResponse = z
  .object({
    user: z.object({ id: z.string(), email: z.string(), role: z.enum(ROLES) }),
    employerId: z.string(),
    sessionId: z.string(),
    expiresAt: z.string().datetime(),
  })
  .meta({ id: 'Session' });

export async function identityRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  const secureCookie = ctx.config.PUBLIC_BASE_URL.startsWith('https:');

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: SIGNIN_PATH,
    summary: 'Exchange a one-time sign-in token for a session cookie',
    description:
      'Single use and short-lived. On success sets the HttpOnly session cookie and redirects to `next` when the URL parser resolves it, against the public base URL, to a path on this service; otherwise (another origin, `//host`, `/\\host`, control characters, a scheme) to `/api/auth/session`.',
    tags: ['Identity'],
    auth: { public: true },
    querystring: z.object({ token: z.string().min(1).max(TOKEN_MAX), next: z.string().max(URL_MAX).optional() }),
    responses: { 302: { description: 'Signed in; redirect' }, 401: { description: 'Invalid, expired or used token' } },
    handler: async ({ query, reply }) => {
      const session = await redeemSignInToken(ctx, { token: query.token });
      reply.setCookie(SESSION_COOKIE, session.sessionSecret, {
        httpOnly: true,
        sameSite: 'lax',
        secure: secureCookie,
        path: '/',
        expires: new Date(session.expiresAt),
      });
      // Resolved as a browser would resolve it, so '/\\evil.example' or '//evil.example' is no open redirect.
      const next = query.next === undefined ? null : normaliseReturnTo(query.next, { PUBLIC_BASE_URL: ctx.config.PUBLIC_BASE_URL, RETURN_TO_ALLOWED_ORIGINS: '' });
      return reply.redirect(next ?? '/api/auth/session', 302);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/auth/session',
    summary: 'The signed-in user, role and employer',
    tags: ['Identity'],
    auth: { modes: ['session'] },
    responses: { 200: { description: 'The current session', schema: sessionResponse } },
    handler: async ({ principal }) => {
      if (principal.kind !== 'session') throw new Error('unreachable: session-only route');
      const row = await findActiveSessionById(ctx.db.slonik, principal.employerId, principal.sessionId);
      return sessionResponse.parse({
        user: { id: principal.userId, email: row.email, role: principal.role },
        employerId: principal.employerId,
        sessionId: principal.sessionId,
        expiresAt: row.expires_at,
      });
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/auth/logout',
    summary: 'End the current session',
    tags: ['Identity'],
    auth: { modes: ['session'] },
    responses: { 204: { description: 'Signed out' } },
    handler: async ({ principal, request, reply }) => {
      if (principal.kind !== 'session') throw new Error('unreachable: session-only route');
      await endSession(ctx, commandContextOf(principal, request.id), { sessionId: principal.sessionId, reason: 'logout' });
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return reply.status(204).send();
    },
  });
}
