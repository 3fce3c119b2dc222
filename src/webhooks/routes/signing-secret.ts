// The signing secret of a webhook subscription: replaced on request (shown once), with an overlap
// during which the previous secret signs too (src/webhooks/signing.ts says what a receiver sees).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import { getWebhook, webhookSubscription } from '../../../projections/webhooks/queries.ts';
import { DEFAULT_SECRET_OVERLAP_SECONDS, endSecretOverlap, MAX_SECRET_OVERLAP_SECONDS, rotateSigningSecret } from '../commands.ts';
import { NEXT_SIGNATURE_HEADER } from '../signing.ts';
import { auth, tags, webhookParams } from './subscriptions.ts';

const ROTATION_DESCRIPTION = [
  'Returns the new secret once. Every attempt from now on, retries of earlier deliveries included, is signed with it; until overlapEndsAt also with the previous one, so that no receiver breaks, whichever secret it holds:',
  `- during the overlap: \`x-webhook-signature: sha256=<hex>\` signed with the PREVIOUS secret (unchanged for receivers that have not switched), \`${NEXT_SIGNATURE_HEADER}: sha256=<hex>\` signed with the NEW secret (receivers that switched verify this header when it is present), and \`webhook-signature: v1,<new> v1,<previous>\` (Standard Webhooks verifiers accept either secret);`,
  `- after it (or at once with overlapSeconds 0): \`x-webhook-signature\` signed with the new secret, no \`${NEXT_SIGNATURE_HEADER}\`, one \`v1,\` signature.`,
  'A second rotation while an overlap lasts is 409 SECRET_OVERLAP_ACTIVE: end the overlap first (POST .../end-secret-overlap).',
].join('\n');

const rotateBody = z
  .strictObject({
    overlapSeconds: z.number().int().min(0).max(MAX_SECRET_OVERLAP_SECONDS).default(DEFAULT_SECRET_OVERLAP_SECONDS).meta({
      description: `How long the previous secret keeps signing: ${DEFAULT_SECRET_OVERLAP_SECONDS} (24 h) by default, at most ${MAX_SECRET_OVERLAP_SECONDS} (7 days); 0 replaces it at once.`,
    }),
  })
  .optional();

export async function webhookSigningSecretRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/rotate-secret',
    summary: 'Replace the signing secret, with an overlap during which the previous one signs too',
    description: ROTATION_DESCRIPTION,
    tags,
    auth,
    params: webhookParams,
    body: rotateBody,
    responses: {
      200: {
        description: 'The new secret',
        schema: z
          .object({
            id: z.string(),
            signingSecret: z.string(),
            overlapEndsAt: z.string().nullable().meta({ description: 'Until when the previous secret signs too; null when it was replaced at once.' }),
          })
          .meta({ id: 'RotatedWebhookSecret' }),
      },
      404: { description: 'No such subscription' },
      409: { description: 'SECRET_OVERLAP_ACTIVE: an earlier rotation\'s overlap still lasts' },
    },
    handler: async ({ params, body, principal, request, reply }) => {
      const overlapSeconds = body?.overlapSeconds ?? DEFAULT_SECRET_OVERLAP_SECONDS;
      const rotated = await rotateSigningSecret(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId, overlapSeconds });
      reply.header('cache-control', 'no-store');
      return { id: params.webhookId, ...rotated };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/end-secret-overlap',
    summary: 'End a secret rotation\'s overlap now',
    description: 'From now on only the new secret signs (receivers still holding the previous one fail). Without an overlap lasting, changes nothing.',
    tags,
    auth,
    params: webhookParams,
    responses: { 200: { description: 'The subscription', schema: webhookSubscription }, 404: { description: 'No such subscription' } },
    handler: async ({ params, principal, request }) => {
      await endSecretOverlap(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId });
      return getWebhook(ctx.db.pg, principal.employerId, params.webhookId);
    },
  });
}
