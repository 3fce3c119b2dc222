// Subscriptions and the delivery log as the routes show them. Everything is scoped by employer: an id
// of another employer answers like an id that does not exist.
import type pg from 'pg';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { notFound } from '../../src/http/errors.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from './rows.ts';
import { pageOf, pageQuery, type Keyset } from '../../src/http/page.ts';
import { CODE_MAX } from '../../src/http/limits.ts';

export const webhookSubscription = z
  .object({
    id: z.string().meta({ example: 'whk_4f1c2b9d0e8a4c6f9b3d2e1a0c7b5d8e' }),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(['active', 'inactive']),
    disabledReason: z
      .enum(['manual', 'failure_threshold', 'gone'])
      .nullable()
      .meta({ description: 'Why an inactive subscription stopped: PATCH, failureCount reaching maxFailures, or the target answering 410 Gone.' }),
    failureCount: z.number().int().meta({ description: 'Deliveries whose final attempt failed since the last success or re-activation.' }),
    maxFailures: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastDelivery: z
      .object({ id: z.string(), event: z.string(), status: z.enum(DELIVERY_STATUSES), statusCode: z.number().int().nullable(), createdAt: z.string() })
      .nullable(),
  })
  .meta({ id: 'WebhookSubscription' });
export type WebhookSubscriptionView = z.infer<typeof webhookSubscription>;

// The subscription reads are the API's hot read path: plain pg statements, named so that each
// connection parses them once (slonik's per-query work had cost as much as the rest of the
// request; `npm run bench -- read`). The benchmark's reference server runs these same statements.
type SubscriptionRow = {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: 'active' | 'inactive';
  disabled_reason: 'manual' | 'failure_threshold' | 'gone' | null;
  failure_count: number;
  max_failures: number;
  created_at: Date;
  updated_at: Date;
  last_delivery_id: string | null;
  last_delivery_event: string | null;
  last_delivery_status: DeliveryStatus | null;
  last_delivery_status_code: number | null;
  last_delivery_at: Date | null;
  /** created_at to the microsecond, for the list's cursor. */
  cursor_at: string;
};

const selectSubscriptions = `
  SELECT s.id, s.url, s.events, s.description, s.status, s.disabled_reason, s.failure_count, s.max_failures, s.created_at, s.updated_at,
         s.created_at::text AS cursor_at,
         d.delivery_id AS last_delivery_id, d.event_type AS last_delivery_event, d.status AS last_delivery_status,
         d.last_status_code AS last_delivery_status_code, d.created_at AS last_delivery_at
  FROM webhook_subscriptions s
  LEFT JOIN LATERAL (
    SELECT delivery_id, event_type, status, last_status_code, created_at FROM webhook_deliveries
    WHERE webhook_id = s.id ORDER BY created_at DESC, delivery_id DESC LIMIT 1
  ) d ON true`;

/** The statement behind GET /api/employer/webhooks: a page of `limit` rows and one more (is there a next page?). */
export function listWebhooksStatement(employerId: string, page: { limit: number; after: Keyset | null }): pg.QueryConfig {
  return page.after
    ? {
        name: 'webhooks.list-after',
        text: `${selectSubscriptions} WHERE s.employer_id = $1 AND (s.created_at, s.id) > ($3::timestamptz, $4) ORDER BY s.created_at, s.id LIMIT $2`,
        values: [employerId, page.limit + 1, page.after.at, page.after.id],
      }
    : { name: 'webhooks.list', text: `${selectSubscriptions} WHERE s.employer_id = $1 ORDER BY s.created_at, s.id LIMIT $2`, values: [employerId, page.limit + 1] };
}

function toView(row: SubscriptionRow): WebhookSubscriptionView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    status: row.status,
    disabledReason: row.disabled_reason,
    failureCount: row.failure_count,
    maxFailures: row.max_failures,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    lastDelivery:
      row.last_delivery_id === null
        ? null
        : {
            id: row.last_delivery_id,
            event: row.last_delivery_event!,
            status: row.last_delivery_status!,
            statusCode: row.last_delivery_status_code,
            createdAt: row.last_delivery_at!.toISOString(),
          },
  };
}

export async function getWebhook(pool: pg.Pool, employerId: string, webhookId: string): Promise<WebhookSubscriptionView> {
  const { rows } = await pool.query<SubscriptionRow>({
    name: 'webhooks.get',
    text: `${selectSubscriptions} WHERE s.employer_id = $1 AND s.id = $2`,
    values: [employerId, webhookId],
  });
  if (!rows[0]) throw notFound('Webhook subscription');
  return toView(rows[0]);
}

/** One page of the employer's subscriptions, oldest first (index webhook_subscriptions_by_employer). */
export async function listWebhooks(
  pool: pg.Pool,
  employerId: string,
  page: { limit: number; after: Keyset | null },
): Promise<{ webhooks: WebhookSubscriptionView[]; next: Keyset | null }> {
  const { rows } = await pool.query<SubscriptionRow>(listWebhooksStatement(employerId, page));
  const { page: shown, next } = pageOf(rows, page.limit, (row) => ({ at: row.cursor_at, id: row.id }));
  return { webhooks: shown.map(toView), next };
}

/** The url, status and sealed secret the direct test needs. */
export async function findWebhookTarget(pool: CommonQueryMethods, employerId: string, webhookId: string) {
  return pool.maybeOne(sql.type(z.object({ url: z.string(), status: z.enum(['active', 'inactive']), sealed_secret: z.string() }))`
    SELECT url, status, sealed_secret FROM webhook_subscriptions WHERE employer_id = ${employerId} AND id = ${webhookId}`);
}

export async function findDeliveryStatus(pool: CommonQueryMethods, employerId: string, webhookId: string, deliveryId: string): Promise<DeliveryStatus | null> {
  if (!z.uuid().safeParse(deliveryId).success) return null;
  return pool.maybeOneFirst(sql.type(z.object({ status: z.enum(DELIVERY_STATUSES) }))`
    SELECT status FROM webhook_deliveries WHERE delivery_id = ${deliveryId} AND webhook_id = ${webhookId} AND employer_id = ${employerId}`);
}

export const deliveryLogEntry = z
  .object({
    id: z.string().meta({ description: 'The delivery id: body id, x-webhook-id and webhook-id of every attempt.' }),
    webhookId: z.string(),
    eventId: z.string().nullable().meta({ description: 'The domain event delivered; null for a direct test.' }),
    event: z.string(),
    trigger: z.enum(['event', 'test']).meta({ description: 'event: a committed event through the queue; test: POST .../test.' }),
    status: z.enum(DELIVERY_STATUSES),
    attemptCount: z.number().int(),
    nextAttemptAt: z.string().nullable(),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
    attempts: z.array(
      z.object({
        attempt: z.number().int(),
        requestedAt: z.string(),
        latencyMs: z.number().int(),
        statusCode: z.number().int().nullable(),
        error: z.string().nullable().meta({ description: 'Why no response arrived (timeout, refused target, network or TLS error).' }),
        responseBody: z.string().meta({ description: "The receiver's answer, truncated to 4096 characters." }),
        nextRetryAt: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'WebhookDelivery' });
export type DeliveryLogEntry = z.infer<typeof deliveryLogEntry>;

export const deliveryFilters = pageQuery({ default: 20, max: 100 }).extend({
  status: z.enum(DELIVERY_STATUSES).optional(),
  event: z.string().max(CODE_MAX).optional(),
});

const deliveryRow = z.object({
  delivery_id: z.string(),
  webhook_id: z.string(),
  event_id: z.string().nullable(),
  event_type: z.string(),
  trigger: z.enum(['event', 'test']),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number(),
  next_attempt_at: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  cursor_at: z.string(),
});

const attemptRow = z.object({
  delivery_id: z.string(),
  attempt: z.number(),
  requested_at: z.string(),
  latency_ms: z.number(),
  status_code: z.number().nullable(),
  error: z.string().nullable(),
  response_body: z.string(),
  next_retry_at: z.string().nullable(),
});

/** One page of a subscription's delivery log, newest first, each delivery with its attempts in order. */
export async function listDeliveries(
  pool: CommonQueryMethods,
  employerId: string,
  webhookId: string,
  filters: Omit<z.infer<typeof deliveryFilters>, 'cursor'> & { after: Keyset | null },
): Promise<{ deliveries: DeliveryLogEntry[]; next: Keyset | null }> {
  const conditions = [sql.fragment`employer_id = ${employerId}`, sql.fragment`webhook_id = ${webhookId}`];
  if (filters.status) conditions.push(sql.fragment`status = ${filters.status}`);
  if (filters.event) conditions.push(sql.fragment`event_type = ${filters.event}`);
  if (filters.after) conditions.push(sql.fragment`(created_at, delivery_id) < (${filters.after.at}::timestamptz, ${filters.after.id}::uuid)`);
  const rows = await pool.any(sql.type(deliveryRow)`
    SELECT delivery_id, webhook_id, event_id, event_type, trigger, status, attempts, next_attempt_at, created_at, completed_at, created_at::text AS cursor_at
    FROM webhook_deliveries WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY created_at DESC, delivery_id DESC LIMIT ${filters.limit + 1}`);
  const { page, next } = pageOf(rows, filters.limit, (row) => ({ at: row.cursor_at, id: row.delivery_id }));
  const attempts = page.length === 0 ? [] : await pool.any(sql.type(attemptRow)`
    SELECT delivery_id, attempt, requested_at, latency_ms, status_code, error, response_body, next_retry_at
    FROM webhook_delivery_attempts WHERE delivery_id = ANY (${sql.array(page.map((row) => row.delivery_id), 'uuid')})
    ORDER BY delivery_id, attempt`);
  const deliveries = page.map((row) => ({
    id: row.delivery_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    event: row.event_type,
    trigger: row.trigger,
    status: row.status,
    attemptCount: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    attempts: attempts
      .filter((attempt) => attempt.delivery_id === row.delivery_id)
      .map((attempt) => ({
        attempt: attempt.attempt,
        requestedAt: attempt.requested_at,
        latencyMs: attempt.latency_ms,
        statusCode: attempt.status_code,
        error: attempt.error,
        responseBody: attempt.response_body,
        nextRetryAt: attempt.next_retry_at,
      })),
  }));
  return { deliveries, next };
}
