// Tapering proposals for the employer's patients, as the platform proposed them, and their outcome
// (authorization:read). Ids of another employer answer 404, like ids that do not exist.
import { z } from 'zod';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { getTaperingProposal, listTaperingProposals, TAPERING_STATUSES, taperingProposalView } from '../../../projections/workflows/queries.ts';
import { AUTHORIZATION_READ_AUTH, nextCursor, workflowId } from './common.ts';

export function taperingProposalRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/tapering-proposals',
      summary: 'List tapering proposals, newest first',
      description: 'Plans the platform proposed to reduce a patient\'s medication, and their outcome. Filter by status; cursor-paged.',
      tags: ['Tapering'],
      auth: AUTHORIZATION_READ_AUTH,
      querystring: pageQuery(LIST_PAGE).extend({ status: z.enum(TAPERING_STATUSES).optional() }),
      responses: { 200: { description: 'One page', schema: z.object({ taperingProposals: z.array(taperingProposalView), nextCursor }).meta({ id: 'TaperingProposalList' }) } },
      handler: async ({ query, principal }) => {
        const { taperingProposals, next } = await listTaperingProposals(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor), status: query.status });
        return { taperingProposals, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/tapering-proposals/:proposalId',
      summary: 'One tapering proposal',
      tags: ['Tapering'],
      auth: AUTHORIZATION_READ_AUTH,
      params: z.object({ proposalId: workflowId }),
      responses: { 200: { description: 'The proposal', schema: taperingProposalView }, 404: { description: 'No such proposal for this employer' } },
      handler: async ({ params, principal }) => getTaperingProposal(ctx.db.slonik, principal.employerId, params.proposalId),
    });
  };
}
