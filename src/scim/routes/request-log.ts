// GET /api/employer/scim-requests: the employer's SCIM request log (src/scim/request-log.ts), for an
// administrator's browser session, as the console's SSO page shows it.
import { z } from 'zod';
import { decodeCursor, encodeCursor } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { listScimRequests, scimRequestEntry, scimRequestFilters } from '../request-log.ts';

export const scimRequestLogRoutes: RoutePlugin = async (fastify, { ctx }) => {
  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/scim-requests',
    summary: 'The SCIM requests of the last 30 days, newest first',
    description:
      'One entry per SCIM request made with the employer\'s token: time, method, path (with its ids; filter and other query values redacted), status, ' +
      'and for errors the scimType and detail (values the IdP sent redacted). Bodies are never kept. Kept RETENTION_SCIM_REQUESTS_DAYS (30) days.',
    tags: ['SSO'],
    auth: { modes: ['session'], role: 'EMPLOYER_ADMIN' },
    querystring: scimRequestFilters,
    responses: {
      200: {
        description: 'One page; pass nextCursor as cursor for the next',
        schema: z.object({ requests: z.array(scimRequestEntry), nextCursor: z.string().nullable() }).meta({ id: 'ScimRequestPage' }),
      },
    },
    handler: async ({ query, principal }) => {
      const { cursor, ...filters } = query;
      const { requests, next } = await listScimRequests(ctx.db.slonik, principal.employerId, { ...filters, after: decodeCursor(cursor, z.string().regex(/^\d{1,19}$/)) });
      return { requests, nextCursor: encodeCursor(next) };
    },
  });
};
