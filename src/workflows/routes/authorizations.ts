// Prior-authorization requests of the employer's patients, as the platform submitted them: list, read
// (authorization:read) and review once (authorization:write). Ids of another employer answer 404, like
// ids that do not exist.
import { z } from 'zod';
import { commandContextOf } from '../../auth/principal.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { AUTHORIZATION_STATUSES, authorizationView, getAuthorization, listAuthorizations } from '../../../projections/workflows/queries.ts';
import { reviewAuthorization } from '../commands.ts';
import { AUTHORIZATION_READ_AUTH, AUTHORIZATION_WRITE_AUTH, nextCursor, workflowId } from './common.ts';

export function authorizationRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/authorizations',
      summary: 'List prior-authorization requests, newest first',
      description: 'Requests the platform submitted for patients of the employer. Filter by status; cursor-paged.',
      tags: ['Authorizations'],
      auth: AUTHORIZATION_READ_AUTH,
      querystring: pageQuery(LIST_PAGE).extend({ status: z.enum(AUTHORIZATION_STATUSES).optional() }),
      responses: { 200: { description: 'One page', schema: z.object({ authorizations: z.array(authorizationView), nextCursor }).meta({ id: 'AuthorizationList' }) } },
      handler: async ({ query, principal }) => {
        const { authorizations, next } = await listAuthorizations(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor), status: query.status });
        return { authorizations, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/authorizations/:authorizationId',
      summary: 'One prior-authorization request',
      tags: ['Authorizations'],
      auth: AUTHORIZATION_READ_AUTH,
      params: z.object({ authorizationId: workflowId }),
      responses: { 200: { description: 'The request', schema: authorizationView }, 404: { description: 'No such request for this employer' } },
      handler: async ({ params, principal }) => getAuthorization(ctx.db.slonik, principal.employerId, params.authorizationId),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/authorizations/:authorizationId/review',
      summary: 'Approve or deny a prior-authorization request (once)',
      description:
        'A request is reviewed once: a second review, whatever its decision, is 409 ALREADY_REVIEWED. Emits `authorization.reviewed`. ' +
        'Not idempotent by key: the one-review rule makes a retry harmless (it gets 409 and the first review stands).',
      tags: ['Authorizations'],
      auth: AUTHORIZATION_WRITE_AUTH,
      params: z.object({ authorizationId: workflowId }),
      body: z.strictObject({
        decision: z.enum(['approved', 'denied']),
        note: z.string().max(2000).optional().meta({ description: 'Shown to the platform and in the webhook; no personal data, please.' }),
      }),
      responses: {
        200: { description: 'The reviewed request', schema: authorizationView },
        404: { description: 'No such request for this employer' },
        409: { description: 'ALREADY_REVIEWED' },
      },
      handler: async ({ params, body, principal, request }) => {
        await reviewAuthorization(ctx, commandContextOf(principal, request.id), { authorizationId: params.authorizationId, decision: body.decision, note: body.note ?? null });
        return getAuthorization(ctx.db.slonik, principal.employerId, params.authorizationId);
      },
    });
  };
}
