// Deliveries of a webhook subscription: a test sent directly (through this process's dispatcher), a
// ping queued like any event, the delivery log, and a finished delivery sent again.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { commandContextOf } from '../../auth/principal.ts';
import { routesUsing } from '../../capability.ts';
import { DomainError } from '../../event-store/decider.ts';
import { notFound } from '../../http/errors.ts';
import { ID_MAX } from '../../http/limits.ts';
import { decodeCursor, encodeCursor } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import { deliveryFilters, deliveryLogEntry, listDeliveries } from '../delivery-log.ts';
import { findWebhookTarget } from '../../../projections/webhooks/queries.ts';
import { attemptDelivery } from '../attempt.ts';
import { redeliver, requestPing } from '../commands.ts';
import { recordTestDelivery } from '../deliveries.ts';
import { pingData } from '../event-types.ts';
import { requestedDeliveriesDescription } from '../requested-deliveries.ts';
import type { WebhookRuntime } from '../runtime.ts';
import { auth, tags, webhookParams } from './subscriptions.ts';

const deliveryParams = webhookParams.extend({ deliveryId: z.string().max(ID_MAX) });

const testResult = z
  .object({
    success: z.boolean().meta({ description: 'The target answered 2xx.' }),
    statusCode: z.number().int().nullable().meta({ description: "The target's HTTP status; null when no response arrived (see error)." }),
    latencyMs: z.number().int(),
    error: z.string().nullable().meta({ description: 'Why no response arrived: timeout, refused address, network or TLS error.' }),
    deliveryId: z.string().meta({ description: 'The test delivery in the delivery log.' }),
  })
  .meta({ id: 'WebhookTestResult' });

/** `services`: this process's webhook runtime (the test send goes through its dispatcher). */
export const webhookDeliveryRoutes = routesUsing<WebhookRuntime>(async function webhookDeliveryRoutes(fastify, { ctx, services: runtime }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/test',
    summary: 'Send one test.ping now, directly (not through the queue)',
    description: 'Same body, signatures and headers as a real delivery; no retries. Always written to the delivery log.',
    tags,
    auth,
    params: webhookParams,
    responses: {
      200: { description: 'What the target answered; success false for a non-2xx answer or no answer', schema: testResult },
      400: { description: 'WEBHOOK_INACTIVE: the subscription is inactive' },
      404: { description: 'No such subscription' },
    },
    handler: async ({ params, principal }) => {
      const target = await findWebhookTarget(ctx.db.slonik, principal.employerId, params.webhookId);
      if (!target) throw notFound('Webhook subscription');
      if (target.status !== 'active') throw new DomainError('invalid', 'WEBHOOK_INACTIVE', 'The webhook subscription is inactive; set status to active with PATCH first.');
      const delivery = {
        deliveryId: randomUUID(),
        employerId: principal.employerId,
        webhookId: params.webhookId,
        timestamp: new Date().toISOString(),
        data: pingData(params.webhookId),
      };
      const { requestedAt, result } = await attemptDelivery(
        { dispatcher: runtime.dispatcher, encryptionKey: ctx.encryptionKey },
        { ...delivery, eventType: 'test.ping', url: target.url, sealedSecret: target.sealed_secret, sealedPreviousSecret: target.previous_sealed_secret },
      );
      await recordTestDelivery(ctx.db.slonik, { ...delivery, requestedAt, result });
      return { success: result.ok, statusCode: result.statusCode, latencyMs: result.latencyMs, error: result.error, deliveryId: delivery.deliveryId };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/ping',
    summary: 'Queue one test.ping through the normal delivery pipeline (retries, delivery log)',
    description: `Unlike POST .../test, answers at once; the outcome appears in GET .../deliveries. ${requestedDeliveriesDescription(ctx)}`,
    tags,
    auth,
    params: webhookParams,
    responses: {
      202: { description: 'Queued' },
      400: { description: 'WEBHOOK_INACTIVE' },
      404: { description: 'No such subscription' },
      429: { description: 'TOO_MANY_DELIVERIES_IN_FLIGHT' },
    },
    handler: async ({ params, principal, request, reply }) => {
      await requestPing(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId });
      return reply.status(202).send();
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/webhooks/:webhookId/deliveries',
    summary: 'The delivery log of a subscription, newest first, with every attempt',
    tags,
    auth,
    params: webhookParams,
    querystring: deliveryFilters,
    responses: {
      200: {
        description: 'One page; pass nextCursor as cursor for the next',
        schema: z.object({ deliveries: z.array(deliveryLogEntry), nextCursor: z.string().nullable() }).meta({ id: 'WebhookDeliveryPage' }),
      },
      404: { description: 'No such subscription' },
    },
    handler: async ({ params, query, principal }) => {
      if (!(await findWebhookTarget(ctx.db.slonik, principal.employerId, params.webhookId))) throw notFound('Webhook subscription');
      const { cursor, ...filters } = query;
      const { deliveries, next } = await listDeliveries(ctx.db.slonik, principal.employerId, params.webhookId, { ...filters, after: decodeCursor(cursor, z.uuid()) });
      return { deliveries, nextCursor: encodeCursor(next) };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks/:webhookId/deliveries/:deliveryId/redeliver',
    summary: 'Send a finished delivery again (same delivery id, fresh retries)',
    description: requestedDeliveriesDescription(ctx),
    tags,
    auth,
    params: deliveryParams,
    responses: {
      202: { description: 'Queued' },
      400: { description: 'WEBHOOK_INACTIVE' },
      404: { description: 'No such subscription or delivery' },
      409: { description: 'DELIVERY_PENDING: the delivery has not finished' },
      429: { description: 'TOO_MANY_DELIVERIES_IN_FLIGHT' },
    },
    handler: async ({ params, principal, request, reply }) => {
      await redeliver(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId, deliveryId: params.deliveryId });
      return reply.status(202).send();
    },
  });
});
