// The delivery log as the routes show it, read from the tables the delivery state machine writes
// (`webhook_deliveries`, `webhook_delivery_attempts`: ./deliveries.ts). Everything is scoped by
// employer: an id of another employer answers like an id that does not exist.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { CODE_MAX } from '../http/limits.ts';
import { pageOf, pageQuery, type Keyset } from '../http/page.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from './events.ts';

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
    recoveryId: z.string().nullable().meta({ description: 'The last recovery (POST .../recover) that sent it again; filter by it to follow its progress.' }),
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
  recoveryId: z.uuid().max(36).optional(),
});

const deliveryRow = z.object({
  delivery_id: z.string(),
  webhook_id: z.string(),
  event_id: z.string().nullable(),
  event_type: z.string(),
  trigger: z.enum(['event', 'test']),
  recovery_id: z.string().nullable(),
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
  if (filters.recoveryId) conditions.push(sql.fragment`recovery_id = ${filters.recoveryId}`);
  if (filters.after) conditions.push(sql.fragment`(created_at, delivery_id) < (${filters.after.at}::timestamptz, ${filters.after.id}::uuid)`);
  const rows = await pool.any(sql.type(deliveryRow)`
    SELECT delivery_id, webhook_id, event_id, event_type, trigger, recovery_id, status, attempts, next_attempt_at, created_at, completed_at, created_at::text AS cursor_at
    FROM webhook_deliveries WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY created_at DESC, delivery_id DESC LIMIT ${filters.limit + 1}`);
  const { page, next } = pageOf(rows, filters.limit, (row) => ({ at: row.cursor_at, id: row.delivery_id }));
  const attempts = page.length === 0 ? [] : await pool.any(sql.type(attemptRow)`
    SELECT delivery_id, attempt, requested_at, latency_ms, status_code, error, response_body, next_retry_at
    FROM webhook_delivery_attempts WHERE delivery_id = ANY (${sql.array(page.map((row) => row.delivery_id), 'uuid')})
    ORDER BY delivery_id, attempt`);
  const attemptsOf = Map.groupBy(attempts, (attempt) => attempt.delivery_id);
  const deliveries = page.map((row) => ({
    id: row.delivery_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    event: row.event_type,
    trigger: row.trigger,
    recoveryId: row.recovery_id,
    status: row.status,
    attemptCount: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    attempts: (attemptsOf.get(row.delivery_id) ?? [])
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
