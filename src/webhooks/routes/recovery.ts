// After a receiver outage: every failed delivery since a given time sent again, in the order the
// deliveries were created, one at a time (the next starts when one succeeds or fails for good), so
// the receiver catches up at the pace it answers. Progress: GET .../recoveries/{recoveryId}, and the
// delivery log filtered by recoveryId.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { notFound } from '../../http/errors.ts';
import { instantSchema } from '../../http/instant.ts';
import { ID_MAX } from '../../http/limits.ts';
import { defineRoute } from '../../http/route.ts';
import { recoverDeliveries } from '../commands.ts';
import { findRecoveryProgress } from '../deliveries.ts';
import { auth, tags, webhookParams } from './subscriptions.ts';

const recoveryProgress = z
  .object({
    recoveryId: z.string(),
    since: z.string(),
    requestedAt: z.string(),
    total: z.number().int().meta({ description: 'Failed deliveries the recovery took.' }),
    succeeded: z.number().int(),
    failed: z.number().int().meta({ description: 'Failed again (every retry of their new series failed).' }),
    pending: z.number().int().meta({ description: 'Still to be sent, or being retried.' }),
    cancelled: z.number().int().meta({ description: 'Stopped: the subscription was disabled or deleted meanwhile.' }),
  })
  .meta({ id: 'WebhookRecovery' });

async function progressOf(ctx: AppContext, employerId: string, webhookId: string, recoveryId: string): Promise<z.infer<typeof recoveryProgress>> {
  const row = await findRecoveryProgress(ctx.db.slonik, { employerId, webhookId, recoveryId });
  if (!row) throw notFound('Recovery');
  const { recovery_id, requested_at, ...counts } = row;
  return { recoveryId: recovery_id, requestedAt: requested_at, ...counts };
}

export async function webhookRecoveryRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/recover',
    summary: 'Send every failed delivery since a time again, in order, one at a time',
    description: 'Takes the deliveries of events whose status is failed and that were created at or after `since`; each becomes pending with a fresh series ' +
      'of retries (same delivery id, so receivers may deduplicate) and they are sent one after another in the order they were created. A delivery is ' +
      'taken once: repeating the request takes only deliveries that failed since (none while the first recovery runs). Idempotency-Key replays the answer. ' +
      'The subscription must be active (re-enable it with PATCH status active first).',
    tags,
    auth,
    params: webhookParams,
    body: z.strictObject({ since: instantSchema.meta({ description: 'ISO 8601: failed deliveries created at or after this instant are sent again.' }) }),
    idempotent: true,
    responses: {
      202: { description: 'The recovery, started', schema: recoveryProgress },
      400: { description: 'WEBHOOK_INACTIVE' },
      404: { description: 'No such subscription' },
    },
    handler: async ({ params, body, principal, request, reply }) => {
      const { recoveryId } = await recoverDeliveries(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId, since: new Date(body.since).toISOString() });
      reply.status(202);
      return progressOf(ctx, principal.employerId, params.webhookId, recoveryId);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/webhooks/:webhookId/recoveries/:recoveryId',
    summary: 'The progress of a recovery',
    tags,
    auth,
    params: webhookParams.extend({ recoveryId: z.string().max(ID_MAX) }),
    responses: { 200: { description: 'Its deliveries counted by status', schema: recoveryProgress }, 404: { description: 'No such subscription or recovery' } },
    handler: async ({ params, principal }) => progressOf(ctx, principal.employerId, params.webhookId, params.recoveryId),
  });
}
