// Authentication of one request against its route's declared requirement. Order: an `x-api-key`
// header decides the mode (the API-key port, ctx.auth.apiKeys); then, on routes that take SMART access
// tokens, `Authorization: Bearer` (the SMART token port: scope, then the resource type in the path);
// otherwise the session cookie (the session port), its rate limit, then role, then scope, then
// cross-site request forgery protection for state-changing calls.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../app-context.ts';
import { DomainError } from '../event-store/decider.ts';
import { authenticatePlatformToken } from './platform-token.ts';
import { assertSessionCallAllowed } from './session-rate-limit.ts';
import { holdsScopeFor, ROLE_SCOPES, type PlatformPrincipal, type Principal, type RouteAuth, type Scope } from './principal.ts';

export const SESSION_COOKIE = 'ei_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export async function authenticate(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, auth: RouteAuth): Promise<Principal | PlatformPrincipal | null> {
  if ('public' in auth || 'checkedByRoute' in auth) return null;
  // Only the Authorization header counts here: an x-api-key or a session cookie opens no platform route.
  if ('platformFamily' in auth) return authenticatePlatformToken(ctx, request, auth.platformFamily);
  const rawKey = request.headers['x-api-key'];
  if (rawKey !== undefined) {
    if (!auth.modes.includes('apiKey')) {
      throw new DomainError('forbidden', 'SESSION_REQUIRED', 'This route accepts only a browser session; API keys cannot call it.');
    }
    const principal = await ctx.auth.apiKeys.authenticate(request, Array.isArray(rawKey) ? rawKey[0]! : rawKey, auth.scope).finally(() => {
      // Headers the pipeline answers with, on success and on its errors alike (RateLimit-*, retry-after, x-api-version).
      if (request.apiKeyReplyHeaders) reply.headers(request.apiKeyReplyHeaders);
    });
    request.principal = principal;
    return principal;
  }

  const bearerToken = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearerToken !== undefined && auth.modes.includes('smartToken')) {
    const principal = await ctx.auth.smartTokens.authenticate(request, bearerToken).catch((error: unknown) => {
      // RFC 6750: a refused bearer token is named in WWW-Authenticate.
      if (error instanceof DomainError && error.kind === 'unauthenticated') reply.header('www-authenticate', 'Bearer error="invalid_token"');
      throw error;
    });
    assertTokenReaches(principal, auth.scope, request);
    request.principal = principal;
    return principal;
  }

  const sessionSecret = request.cookies?.[SESSION_COOKIE];
  if (!sessionSecret || !auth.modes.includes('session')) {
    const carriers = [
      ...(auth.modes.includes('apiKey') ? ['an x-api-key header'] : []),
      ...(auth.modes.includes('smartToken') ? ['a SMART access token (Authorization: Bearer)'] : []),
      ...(auth.modes.includes('session') ? ['a browser session'] : []),
    ];
    throw new DomainError('unauthenticated', 'AUTHENTICATION_REQUIRED', `This route requires ${carriers.join(' or ')}.`);
  }
  const session = await ctx.auth.sessions(sessionSecret);
  if (!session) throw new DomainError('unauthenticated', 'SESSION_EXPIRED', 'The session is invalid, expired or ended. Sign in again.');
  assertSessionCallAllowed(ctx, session, reply);
  const { role } = session;
  const principal: Principal = {
    kind: 'session',
    employerId: session.employerId,
    userId: session.userId,
    role,
    sessionId: session.sessionId,
    scopes: ROLE_SCOPES[role] ?? [],
  };
  if (auth.role && role !== auth.role) throw new DomainError('forbidden', 'FORBIDDEN_ROLE', `This route requires the role ${auth.role}.`);
  if (auth.scope && !principal.scopes.includes(auth.scope)) {
    throw new DomainError('forbidden', 'INSUFFICIENT_SCOPE', `Your role does not allow ${auth.scope}.`, { requiredScopes: [auth.scope], keyScopes: [...principal.scopes] });
  }
  if (!SAFE_METHODS.has(request.method)) assertSameOrigin(ctx, request);
  request.principal = principal;
  return principal;
}

/** A SMART token holds the route's scope, and when the path names a resource type, for that type. */
function assertTokenReaches(principal: Principal, scope: Scope | undefined, request: FastifyRequest) {
  if (scope === undefined || principal.kind !== 'smartClient') return;
  const types = principal.resourceTypes[scope];
  if (types === undefined) {
    throw new DomainError('forbidden', 'INSUFFICIENT_SCOPE', `The access token's scopes do not allow ${scope}.`, { requiredScopes: [scope], keyScopes: [...principal.scopes] });
  }
  const { resourceType } = request.params as { resourceType?: unknown };
  if (typeof resourceType === 'string' && !holdsScopeFor(principal, scope, resourceType)) {
    throw new DomainError('forbidden', 'INSUFFICIENT_SCOPE', `The access token's scopes do not allow ${scope} on ${resourceType}.`, { requiredScopes: [scope], keyScopes: [...principal.scopes] });
  }
}

/**
 * Cookie-authenticated writes (and the sign-in form's post) must come from our own pages: browsers
 * send Origin on cross-site (and same-origin) POST/PUT/PATCH/DELETE; Referer is the fallback. A
 * request carrying neither is refused.
 */
export function assertSameOrigin(ctx: AppContext, request: FastifyRequest) {
  const expected = new URL(ctx.config.PUBLIC_BASE_URL).origin;
  const origin = request.headers.origin ?? originOf(request.headers.referer);
  if (origin !== expected) {
    throw new DomainError('forbidden', 'CSRF_REJECTED', 'Cross-site request refused: the Origin (or Referer) header must be this service\'s own origin.');
  }
}

function originOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    apiKeyReplyHeaders?: Record<string, string>;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
    errorShape?: import('../http/errors.ts').ErrorShape;
  }
}
