// The signing secret of a webhook subscription: replaced on request, shown once.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import { rotateSigningSecret } from '../commands.ts';
import { auth, tags, webhookParams } from './subscriptions.ts';

export async function webhookSigningSecretRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/rotate-secret',
    summary: 'Replace the signing secret',
    description: 'Returns the new secret once. Every attempt from now on, retries of earlier deliveries included, is signed with it.',
    tags,
    auth,
    params: webhookParams,
    responses: {
      200: { description: 'The new secret', schema: z.object({ id: z.string(), signingSecret: z.string() }).meta({ id: 'RotatedWebhookSecret' }) },
      404: { description: 'No such subscription' },
    },
    handler: async ({ params, principal, request, reply }) => {
      const signingSecret = await rotateSigningSecret(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId });
      reply.header('cache-control', 'no-store');
      return { id: params.webhookId, signingSecret };
    },
  });
}
