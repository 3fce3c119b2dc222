// The SCIM bearer token on its own: its state, a rotation with an overlap (the replaced token keeps
// working while the IdP administrator pastes the new one), and the overlap's early end. POST
// /api/employer/sso with rotateScimToken: true rotates with the default overlap.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import { getScimTokenStatus } from '../../../projections/sso/queries.ts';
import { DEFAULT_SCIM_TOKEN_OVERLAP_SECONDS, endScimTokenOverlap, rotateScimToken } from '../commands.ts';
import { SSO_AUTH } from './configuration.ts';

const MAX_SCIM_TOKEN_OVERLAP_SECONDS = 7 * 24 * 3600;
const tags = ['SSO'];

const scimTokenStatus = z
  .object({
    scimEnabled: z.boolean(),
    tokenExists: z.boolean(),
    rotatedAt: z.string().nullable().meta({ description: 'When the current token was issued.' }),
    previousTokenValidUntil: z.string().nullable().meta({ description: 'While the token a rotation replaced still works: until when. Null otherwise.' }),
  })
  .meta({ id: 'ScimTokenStatus' });

const rotateBody = z
  .strictObject({
    overlapSeconds: z.number().int().min(0).max(MAX_SCIM_TOKEN_OVERLAP_SECONDS).meta({
      description: `How long the replaced token keeps working: ${DEFAULT_SCIM_TOKEN_OVERLAP_SECONDS} (1 h) by default, at most ${MAX_SCIM_TOKEN_OVERLAP_SECONDS} (7 days); 0 stops it at once.`,
    }),
  })
  .partial()
  .optional();

export async function scimTokenRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/sso/scim-token',
    summary: 'The SCIM token\'s state: issued when, and whether the token it replaced still works',
    tags,
    auth: SSO_AUTH,
    responses: { 200: { description: 'The state (never a token)', schema: scimTokenStatus } },
    handler: async ({ principal }) => getScimTokenStatus(ctx.db.slonik, principal.employerId),
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/sso/scim-token/rotate',
    summary: 'Rotate the SCIM token; the old one keeps working for an overlap',
    description: 'Returns the new token once. The old token keeps working until previousTokenValidUntil (then 401), so provisioning goes on until the IdP ' +
      'administrator pastes the new one; POST .../end-overlap stops it earlier, and so does turning SCIM off. A rotation during an overlap stops the ' +
      'token replaced before (only the last replaced token works). 400 SCIM_NOT_ENABLED without SCIM.',
    tags,
    auth: SSO_AUTH,
    body: rotateBody,
    responses: {
      200: { description: 'The new token and the state', schema: scimTokenStatus.extend({ scimBearerToken: z.string() }).meta({ id: 'RotatedScimToken' }) },
      400: { description: 'SCIM_NOT_ENABLED' },
    },
    handler: async ({ body, principal, request, reply }) => {
      reply.header('cache-control', 'no-store');
      const scimBearerToken = await rotateScimToken(ctx, commandContextOf(principal, request.id), { overlapSeconds: body?.overlapSeconds ?? DEFAULT_SCIM_TOKEN_OVERLAP_SECONDS });
      return { ...(await getScimTokenStatus(ctx.db.slonik, principal.employerId)), scimBearerToken };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/sso/scim-token/end-overlap',
    summary: 'Stop the replaced SCIM token now',
    description: 'Only the current token works from now on. Without a replaced token still working, changes nothing.',
    tags,
    auth: SSO_AUTH,
    responses: { 200: { description: 'The state', schema: scimTokenStatus } },
    handler: async ({ principal, request }) => {
      await endScimTokenOverlap(ctx, commandContextOf(principal, request.id));
      return getScimTokenStatus(ctx.db.slonik, principal.employerId);
    },
  });
}
