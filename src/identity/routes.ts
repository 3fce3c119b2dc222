// The built-in identity provider's browser endpoints: a sign-in link's confirmation page and the
// exchange its form posts, the current session, logout.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf, ROLES } from '../auth/principal.ts';
import { assertSameOrigin, SESSION_COOKIE } from '../auth/authenticate.ts';
import { CONSOLE_CSP } from '../console/plugin.ts';
import { defineRoute } from '../http/route.ts';
import { normaliseReturnTo } from '../sso/return-to.ts';
import { TOKEN_MAX, URL_MAX } from '../http/limits.ts';
import { endSession, inspectSignInToken, redeemSignInToken, SIGNIN_PATH } from './commands.ts';
import { signInConfirmationPage } from './signin-page.ts';
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

  // Resolved as a browser would resolve it, so '/\\evil.example' or '//evil.example' is no open redirect.
  const returnPath = (next: string | undefined) =>
    next === undefined ? null : normaliseReturnTo(next, { PUBLIC_BASE_URL: ctx.config.PUBLIC_BASE_URL, RETURN_TO_ALLOWED_ORIGINS: '' });
  const signInForm = z.object({ token: z.string().min(1).max(TOKEN_MAX), next: z.string().max(URL_MAX).optional() });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: SIGNIN_PATH,
    summary: 'The confirmation page of a one-time sign-in link',
    description:
      'What a sign-in link opens. Signs nobody in: for a usable token it answers an HTML page naming the account, whose button POSTs the token ' +
      '(and `next`, when the URL parser resolves it, against the public base URL, to a path on this service) to this URL; a page that merely ' +
      'opens the link in a browser (login CSRF) or a mail scanner\'s preview changes nothing. The page has no script and is served under the ' +
      'console\'s Content-Security-Policy (no framing). An unknown, used or expired token is 401, a deactivated user 403, as on the POST.',
    tags: ['Identity'],
    auth: { public: true },
    querystring: signInForm,
    responses: {
      200: { description: 'The confirmation page', schema: z.string(), contentType: 'text/html' },
      401: { description: 'Invalid, expired or used token' },
      403: { description: 'User deactivated' },
    },
    handler: async ({ query, reply }) => {
      const { email } = await inspectSignInToken(ctx, { token: query.token });
      const page = signInConfirmationPage({ email, token: query.token, next: returnPath(query.next), action: `${ctx.config.PUBLIC_BASE_URL}${SIGNIN_PATH}` });
      return reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', CONSOLE_CSP)
        .header('x-content-type-options', 'nosniff')
        // The page's URL holds the token: never cached, and sent as Referer only to this origin (the form's Origin header stays).
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'same-origin')
        .send(page);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: SIGNIN_PATH,
    summary: 'Exchange a one-time sign-in token for a session cookie',
    description:
      'The confirmation page\'s form (application/x-www-form-urlencoded; JSON is accepted too), from this service\'s own origin only (`Origin`, ' +
      'else `Referer`; 403 CSRF_REJECTED otherwise), with the token in the body. Single use and short-lived. On success sets the HttpOnly session cookie ' +
      'and redirects (303) to `next` when the URL parser resolves it, against the public base URL, to a path on this service; otherwise ' +
      '(another origin, `//host`, `/\\host`, control characters, a scheme) to `/api/auth/session`.',
    tags: ['Identity'],
    auth: { public: true },
    body: signInForm,
    responses: {
      303: { description: 'Signed in; redirect' },
      401: { description: 'Invalid, expired or used token' },
      403: { description: 'Not from this origin (CSRF_REJECTED), or user deactivated' },
    },
    handler: async ({ body, request, reply }) => {
      assertSameOrigin(ctx, request);
      const session = await redeemSignInToken(ctx, { token: body.token });
      reply.setCookie(SESSION_COOKIE, session.sessionSecret, {
        httpOnly: true,
        sameSite: 'lax',
        secure: secureCookie,
        path: '/',
        expires: new Date(session.expiresAt),
      });
      return reply.redirect(returnPath(body.next) ?? '/api/auth/session', 303);
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
