// Webhook management (SPEC 4.3): browser session, or API key with webhook:manage. Subscriptions of
// another employer answer 404, like ones that do not exist. A key may point a subscription at a URL
// only for events it could read through the API (WEBHOOK_EVENT_READ_ACCESS): webhook:manage alone
// gives no wider read than the key's other scopes.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf, type Principal, type Scope } from '../../auth/principal.ts';
import { DomainError } from '../../event-store/decider.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import { CODE_MAX, DESCRIPTION_MAX, ID_MAX, URL_MAX } from '../../http/limits.ts';
import { getWebhook, listWebhooks, webhookSubscription } from '../../../projections/webhooks/queries.ts';
import { createWebhook, deleteWebhook, updateWebhook } from '../commands.ts';
import { WEBHOOK_EVENT_READ_ACCESS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../event-types.ts';
import { MAX_ATTEMPTS } from '../retry-schedule.ts';
import { DEFAULT_MAX_FAILURES } from '../subscription.ts';

export const auth = { modes: ['apiKey', 'session'], scope: 'webhook:manage' } as const;
export const tags = ['Webhooks'];
const EVENT_ACCESS_RULE =
  'With an API key, every event must be one the key could read through the API: tapering.* and authorization.reviewed need authorization:read, ' +
  'simulation.completed simulate:run, cohort.uploaded cohort:read, export.ready export:read (403 INSUFFICIENT_SCOPE naming them); invoice.paid only in an ' +
  "administrator's session (403 SESSION_REQUIRED); test.ping needs nothing more.";

/** A key sends events to a URL only if it could read them otherwise (unknown event names are left to the command's 400). */
function assertMayReceive(principal: Principal, events: readonly string[]) {
  if (principal.kind !== 'apiKey') return;
  const access = events.flatMap((event) => (event in WEBHOOK_EVENT_READ_ACCESS ? [WEBHOOK_EVENT_READ_ACCESS[event as WebhookEventType]] : []));
  if (access.includes('session')) {
    throw new DomainError('forbidden', 'SESSION_REQUIRED', "invoice.paid carries billing, which only an administrator's session reads: subscribe to it in a browser session.");
  }
  const missing = [...new Set(access.filter((scope): scope is Scope => scope !== null && scope !== 'session' && !principal.scopes.includes(scope)))];
  if (missing.length > 0) {
    throw new DomainError('forbidden', 'INSUFFICIENT_SCOPE', `These events carry data that needs ${missing.join(', ')} to read; this key does not hold it.`, { requiredScopes: missing, keyScopes: [...principal.scopes] });
  }
}

const url = z.string().trim().min(1).max(URL_MAX).meta({
  description: 'https only; the host must resolve, within WEBHOOK_DNS_TIMEOUT_MS, to public addresses only. Otherwise 400 INVALID_WEBHOOK_URL "target not allowed", ' +
    'the same answer for a private address (literal or resolved), a name that does not resolve and a resolution that timed out.',
});
const events = z
  .array(z.string().max(CODE_MAX))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .meta({ description: `Webhook event types: ${WEBHOOK_EVENT_TYPES.join(', ')}. Unknown types are a 400 UNKNOWN_WEBHOOK_EVENT naming them.` });
const maxFailures = z.number().int().min(1).max(1000).meta({ description: `Deliveries whose final attempt fails before the subscription is disabled. Default ${DEFAULT_MAX_FAILURES}.` });

const createBody = z.strictObject({
  url,
  events,
  description: z.string().max(DESCRIPTION_MAX).optional(),
  maxFailures: maxFailures.optional(),
});
const patchBody = z
  .strictObject({
    status: z.enum(['active', 'inactive']).optional().meta({ description: 'active re-enables a disabled subscription and resets failureCount.' }),
    url: url.optional(),
    events: events.optional(),
    description: z.string().max(DESCRIPTION_MAX).nullable().optional(),
    maxFailures: maxFailures.optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'give at least one of status, url, events, description, maxFailures');

const createdWebhook = webhookSubscription
  .extend({ signingSecret: z.string().meta({ description: 'whsec_ + base64 of 32 random bytes. Shown only here; stored encrypted.' }) })
  .meta({ id: 'CreatedWebhookSubscription' });

export const webhookParams = z.object({ webhookId: z.string().max(ID_MAX) });

export async function webhookSubscriptionRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/webhooks',
    summary: 'Subscribe an HTTPS endpoint to webhook events',
    description:
      'Deliveries are POSTs signed twice: `x-webhook-signature: sha256=<hex HMAC of the body keyed with the whole secret>` ' +
      '(GitHub style) and Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`), which also ' +
      `authenticates the time; during a secret rotation's overlap both secrets sign (POST .../rotate-secret). A failed attempt is retried up to ${MAX_ATTEMPTS - 1} times, after about 5 s, 5 min, 30 min, 2 h and 5 h. ${EVENT_ACCESS_RULE}`,
    tags,
    auth,
    body: createBody,
    idempotent: true,
    responses: { 201: { description: 'The subscription, with its signing secret', schema: createdWebhook } },
    handler: async ({ body, principal, request, reply }) => {
      assertMayReceive(principal, body.events);
      const { webhookId, signingSecret } = await createWebhook(ctx, commandContextOf(principal, request.id), {
        url: body.url,
        events: body.events,
        description: body.description ?? null,
        maxFailures: body.maxFailures ?? DEFAULT_MAX_FAILURES,
      });
      reply.status(201).header('cache-control', 'no-store');
      return { ...(await getWebhook(ctx.db.pg, principal.employerId, webhookId)), signingSecret };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/webhooks',
    summary: 'List the webhook subscriptions of the employer',
    tags,
    auth,
    querystring: pageQuery(LIST_PAGE),
    responses: {
      200: {
        description: 'One page of subscriptions, oldest first; pass nextCursor as cursor for the next (null on the last page)',
        schema: z
          .object({ webhooks: z.array(webhookSubscription), availableEvents: z.array(z.enum(WEBHOOK_EVENT_TYPES)), nextCursor: z.string().nullable() })
          .meta({ id: 'WebhookSubscriptionList' }),
      },
    },
    handler: async ({ query, principal }) => {
      const { webhooks, next } = await listWebhooks(ctx.db.pg, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor) });
      return { webhooks, availableEvents: [...WEBHOOK_EVENT_TYPES], nextCursor: encodeCursor(next) };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/webhooks/:webhookId',
    summary: 'One webhook subscription: status, failureCount, maxFailures and its last delivery',
    tags,
    auth,
    params: webhookParams,
    responses: { 200: { description: 'The subscription (never its secret)', schema: webhookSubscription }, 404: { description: 'No such subscription' } },
    handler: async ({ params, principal }) => getWebhook(ctx.db.pg, principal.employerId, params.webhookId),
  });

  defineRoute(fastify, ctx, {
    method: 'PATCH',
    url: '/api/employer/webhooks/:webhookId',
    summary: 'Change a subscription, or disable (status inactive) or re-enable (status active) it',
    description: `Disabling cancels its pending deliveries. Re-enabling resets failureCount; a POST .../test afterwards is recommended. Changing url or events: ${EVENT_ACCESS_RULE}`,
    tags,
    auth,
    params: webhookParams,
    body: patchBody,
    responses: { 200: { description: 'The subscription after the change', schema: webhookSubscription }, 404: { description: 'No such subscription' } },
    handler: async ({ params, body, principal, request }) => {
      // A new URL receives every event of the subscription; new events go to its URL.
      if (principal.kind === 'apiKey' && (body.url !== undefined || body.events !== undefined)) {
        assertMayReceive(principal, body.events ?? (await getWebhook(ctx.db.pg, principal.employerId, params.webhookId)).events);
      }
      await updateWebhook(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId, ...body });
      return getWebhook(ctx.db.pg, principal.employerId, params.webhookId);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'DELETE',
    url: '/api/employer/webhooks/:webhookId',
    summary: 'Delete a subscription and stop its pending deliveries',
    tags,
    auth,
    params: webhookParams,
    responses: { 204: { description: 'Deleted' }, 404: { description: 'No such subscription' } },
    handler: async ({ params, principal, request, reply }) => {
      await deleteWebhook(ctx, commandContextOf(principal, request.id), { webhookId: params.webhookId });
      return reply.status(204).send();
    },
  });
}
