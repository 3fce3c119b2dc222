// SCIM 2.0 under /api/scim/v2 (RFC 7643/7644, SPEC 4.6): discovery documents, Users and Groups.
// Every request passes the rate limit and then the employer's bearer token (an onRequest hook of this
// plugin, before the body is even read), and every answer is application/scim+json, errors included;
// each authenticated request is written to the employer's SCIM request log (src/scim/request-log.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../app-context.ts';
import { DomainError } from '../../event-store/decider.ts';
import { assertAllowed } from '../../http/token-buckets.ts';
import { acceptJson, type RoutePlugin } from '../../http/server.ts';
import type { ScimCaller } from '../commands.ts';
import type { ScimRateLimiter } from '../rate-limit.ts';
import { createScimWriter } from '../read-your-writes.ts';
import { recordScimRequests } from '../request-log.ts';
import { discoveryRoutes } from './discovery.ts';
import { groupRoutes } from './groups.ts';
import { rootSearchRoutes } from './search.ts';
import { SCIM_CONTENT_TYPE, SCIM_PATH, scimErrorShape, scimRouteDefiner } from './scim-route.ts';
import { userRoutes } from './users.ts';

export function scimRoutes(limiter: ScimRateLimiter): RoutePlugin {
  return async (fastify, { ctx }) => {
    // Okta's test suite posts plain JSON; RFC 7644 clients send application/scim+json.
    acceptJson(fastify, SCIM_CONTENT_TYPE);
    fastify.errorShapesByPrefix.set(SCIM_PATH, scimErrorShape);
    fastify.addHook('onRequest', async (request, reply) => {
      request.scimCaller = await authenticateScim(ctx, limiter, request, reply);
    });
    recordScimRequests(fastify, ctx);

    const routes = { ctx, writer: createScimWriter(ctx), baseUrl: `${ctx.config.PUBLIC_BASE_URL}${SCIM_PATH}`, route: scimRouteDefiner(fastify, ctx) };
    discoveryRoutes(routes);
    userRoutes(routes);
    groupRoutes(routes);
    rootSearchRoutes(routes);

    // Anything else under the SCIM base answers in the SCIM envelope too (after authentication).
    fastify.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url: `${SCIM_PATH}/*`,
      config: { auth: { public: true }, errorShape: scimErrorShape },
      schema: { hide: true },
      handler: async (request) => {
        throw new DomainError('not_found', 'NOT_FOUND', `No SCIM endpoint ${request.method} ${request.url.split('?')[0]}.`);
      },
    });
  };
}

/** Rate limit first (no database work for a flood; src/scim/rate-limit.ts), then the bearer token of one employer. */
async function authenticateScim(ctx: AppContext, limiter: ScimRateLimiter, request: FastifyRequest, reply: FastifyReply): Promise<ScimCaller> {
  const token = bearerTokenOf(request);
  const current = token !== null && (await ctx.auth.scimTokens.isCurrent(token));
  assertAllowed(limiter.admit(request.ip, token, current), reply, 'Too many SCIM requests');
  const caller = token === null ? null : await ctx.auth.scimTokens.ownerOf(token);
  if (!caller) {
    reply.header('www-authenticate', 'Bearer realm="scim"');
    throw new DomainError(
      'unauthenticated',
      'INVALID_SCIM_TOKEN',
      token === null ? 'A SCIM bearer token is required: Authorization: Bearer <token>.' : 'The SCIM bearer token is invalid or no longer valid.',
    );
  }
  limiter.recordAuthenticated(request.ip, current);
  return caller;
}

function bearerTokenOf(request: FastifyRequest): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1] ?? null;
}
