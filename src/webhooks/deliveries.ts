// The delivery state machine and log in SQL (the routes read the log through ./delivery-log.ts). A
// delivery is pending until an attempt succeeds, its last retry fails (failed), or its subscription
// stops (cancelled). Jobs only say "try attempt n of delivery d": each attempt is claimed on the row
// first, so a stale or duplicate job does nothing.
import { sql, type CommonQueryMethods, type DatabasePool, type FragmentSqlToken, type ValueExpression } from 'slonik';
import { z } from 'zod';
import { previousSecretInOverlap } from '../../projections/webhooks/queries.ts';
import { currentTraceContext } from '../tracing.ts';
import { handOverOldestTickets } from '../worker/admission.ts';
import { leaseAbandoned, unlockJobsOfDeadWorkers } from '../worker/lease.ts';
import { employerJobArguments, employerJobFlagArgument } from '../worker/fair-share.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from './events.ts';
import type { WebhookAttemptResult } from './send.ts';

export const DELIVER_TASK = 'webhook_deliver';

/** What a delivery job carries: which attempt (1-based, counted over the delivery's life) to make. */
export const deliverJobPayload = z.object({ deliveryId: z.uuid(), attempt: z.number().int().positive() });

/**
 * The job of one attempt, one of its employer's jobs. One job key per delivery
 * (`webhook_delivery:<id>`), so the next attempt's job replaces a waiting one instead of doubling it
 * (graphile-worker detaches the key from the running job that schedules its successor). The job
 * carries the active trace context, if any, so that the attempt continues the trace of the event's
 * fan-out or of the attempt before it (src/worker/runner.ts).
 */
function addDeliveryJob(deliveryId: ValueExpression, attempt: ValueExpression, runAt: ValueExpression, employerArguments: FragmentSqlToken) {
  const { traceparent = null } = currentTraceContext();
  return sql.fragment`graphile_worker.add_job(${DELIVER_TASK}, json_strip_nulls(json_build_object('deliveryId', (${deliveryId})::text, 'attempt', (${attempt})::int,
      'traceparent', ${traceparent}::text)),
    run_at => (${runAt})::timestamptz, job_key => 'webhook_delivery:' || (${deliveryId})::text, ${employerArguments})`;
}

/** The deliveries an employer asked for (queued pings, redeliveries) still pending: they count against its limit (./requested-deliveries.ts). */
export function pendingRequestedDeliveries(employerId: string) {
  return sql.fragment`SELECT count(*) FROM webhook_deliveries WHERE employer_id = ${employerId} AND status = 'pending'
    AND (redelivered_at IS NOT NULL OR (event_type = 'test.ping' AND trigger = 'event'))`;
}

/**
 * Fan-out of one domain event: one pending delivery per active subscription of the event's tenant
 * that asked for it, each with its first attempt's job, in one statement. The (webhook, event)
 * uniqueness makes a re-run add nothing. With `admittedAs`, each delivery created takes over an
 * admission ticket of that kind (src/worker/admission.ts). Returns how many deliveries were created.
 */
export async function enqueueEventDeliveries(
  pool: CommonQueryMethods,
  input: {
    employerId: string; eventId: string; webhookEvent: string; timestamp: string; data: Record<string, unknown>; onlyWebhookId: string | null;
    admittedAs?: string | undefined;
  },
): Promise<number> {
  const target = input.onlyWebhookId === null ? sql.fragment`${input.webhookEvent} = ANY (s.events)` : sql.fragment`s.id = ${input.onlyWebhookId}`;
  return pool.oneFirst(sql.type(z.object({ created: z.coerce.number() }))`
    WITH created AS (
      INSERT INTO webhook_deliveries (delivery_id, employer_id, webhook_id, event_id, event_type, event_timestamp, data, trigger, status, next_attempt_at)
      SELECT gen_random_uuid(), s.employer_id, s.id, ${input.eventId}, ${input.webhookEvent}, ${input.timestamp}, ${JSON.stringify(input.data)}::json,
             'event', 'pending', now()
      FROM webhook_subscriptions s
      WHERE s.employer_id = ${input.employerId} AND s.status = 'active' AND ${target}
      ON CONFLICT (webhook_id, event_id) DO NOTHING
      RETURNING delivery_id, employer_id
    ), jobs AS (
      SELECT ${addDeliveryJob(sql.fragment`created.delivery_id`, sql.fragment`1`, sql.fragment`now()`, employerJobArguments(input.employerId))} FROM created
    )${input.admittedAs === undefined ? sql.fragment`` : sql.fragment`, handed_over AS (
      ${handOverOldestTickets(input.employerId, input.admittedAs, sql.fragment`(SELECT count(*) FROM created)`)}
    )`}
    SELECT count(*) AS created FROM jobs`);
}

const claimedRow = z.object({
  delivery_id: z.string(),
  employer_id: z.string(),
  webhook_id: z.string(),
  event_type: z.string(),
  event_timestamp: z.string(),
  data: z.record(z.string(), z.unknown()),
  series_start: z.number(),
  url: z.string(),
  sealed_secret: z.string(),
  previous_sealed_secret: z.string().nullable(),
  failure_count: z.number(),
});
export type ClaimedAttempt = z.infer<typeof claimedRow>;

/**
 * Marks attempt `attempt` as in flight under this process's lease, if it is still due: the delivery
 * is pending with attempt - 1 attempts made and none in flight, and its subscription is active.
 * Returns null otherwise (stale or duplicate job, or the subscription stopped).
 */
export async function claimAttempt(
  pool: CommonQueryMethods,
  input: { deliveryId: string; attempt: number; lease: number; worker: string | null },
): Promise<ClaimedAttempt | null> {
  return pool.maybeOne(sql.type(claimedRow)`
    UPDATE webhook_deliveries d
    SET attempt_lease = ${input.lease}, attempt_worker = ${input.worker}, attempt_started_at = now()
    FROM webhook_subscriptions s
    WHERE d.delivery_id = ${input.deliveryId} AND s.id = d.webhook_id AND s.status = 'active'
      AND d.status = 'pending' AND d.attempts = ${input.attempt - 1} AND d.attempt_lease IS NULL
    RETURNING d.delivery_id, d.employer_id, d.webhook_id, d.event_type, d.event_timestamp, d.data, d.series_start, s.url, s.sealed_secret,
      ${previousSecretInOverlap} AS previous_sealed_secret, s.failure_count`);
}

/** Gives up this process's claim on an attempt that failed before its end was recorded, so it can be claimed again. */
export async function releaseAttempt(pool: CommonQueryMethods, input: { deliveryId: string; lease: number }): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE webhook_deliveries SET attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL
    WHERE delivery_id = ${input.deliveryId} AND attempt_lease = ${input.lease}`);
}

/**
 * Claims a live process has held far longer than any attempt takes (its release failed, say with
 * the database unreachable for a moment) are released, and their attempt's job added again: the
 * job itself has ended, so nothing else would try the delivery again. Dead processes' claims are
 * recoverInterruptedAttempts'. Returns how many were requeued.
 */
export async function requeueAbandonedAttempts(pool: CommonQueryMethods, olderThanMs: number): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ requeued: z.coerce.number() }))`
    WITH abandoned AS (
      UPDATE webhook_deliveries SET attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL
      WHERE status = 'pending' AND attempt_lease IS NOT NULL AND attempt_started_at < now() - make_interval(secs => ${olderThanMs / 1000})
      RETURNING delivery_id, employer_id, attempts
    ), jobs AS (
      SELECT ${addDeliveryJob(sql.fragment`abandoned.delivery_id`, sql.fragment`abandoned.attempts + 1`, sql.fragment`now()`, employerJobFlagArgument(sql.fragment`abandoned.employer_id`))} FROM abandoned
    )
    SELECT count(*)::int AS requeued FROM jobs`);
}

/**
 * Attempts whose worker process died (their lease is held by no one, src/worker/lease.ts) are released
 * and their jobs unlocked, so the same job runs again: same delivery, same x-webhook-id. Returns how many.
 */
export async function recoverInterruptedAttempts(pool: DatabasePool): Promise<number> {
  return pool.transaction(async (tx) => {
    const workers = await tx.anyFirst(sql.type(z.object({ attempt_worker: z.string().nullable() }))`
      WITH orphaned AS (
        SELECT d.delivery_id, d.attempt_worker FROM webhook_deliveries d
        WHERE d.attempt_lease IS NOT NULL AND ${leaseAbandoned(sql.fragment`d.attempt_lease`)}
        FOR UPDATE OF d SKIP LOCKED
      )
      UPDATE webhook_deliveries d SET attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL
      FROM orphaned o WHERE d.delivery_id = o.delivery_id
      RETURNING o.attempt_worker`);
    if (workers.length === 0) return 0;
    await unlockJobsOfDeadWorkers(tx, workers);
    return workers.length;
  });
}

/** A pending delivery whose subscription is inactive or deleted will not be attempted again. */
export async function cancelIfSubscriptionStopped(pool: CommonQueryMethods, deliveryId: string): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE webhook_deliveries d SET status = 'cancelled', next_attempt_at = NULL, completed_at = now()
    WHERE d.delivery_id = ${deliveryId} AND d.status = 'pending' AND d.attempt_lease IS NULL
      AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.id = d.webhook_id AND s.status = 'active')`);
}

/** Stops every pending delivery of a subscription (deleted or deactivated). An attempt in flight still logs its result. */
export async function cancelPendingDeliveries(pool: CommonQueryMethods, webhookId: string): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, completed_at = now()
    WHERE webhook_id = ${webhookId} AND status = 'pending'`);
}

/**
 * Ends an attempt in one transaction: its log entry, the delivery's new state, and the next
 * attempt's job when `nextRetryAt` is set and the delivery was not cancelled meanwhile. Returns the
 * delivery's status, or null when this process no longer held the attempt (its lease was lost and
 * another worker re-ran it).
 */
export async function finishAttempt(
  pool: DatabasePool,
  input: { deliveryId: string; attempt: number; lease: number; requestedAt: Date; result: WebhookAttemptResult; nextRetryAt: Date | null },
): Promise<DeliveryStatus | null> {
  const { deliveryId, attempt, result } = input;
  const nextRetryAt = result.ok ? null : input.nextRetryAt?.toISOString() ?? null;
  const outcome: DeliveryStatus = result.ok ? 'succeeded' : nextRetryAt === null ? 'failed' : 'pending';
  return pool.transaction(async (tx) => {
    const ended = await tx.maybeOne(sql.type(z.object({ status: z.enum(DELIVERY_STATUSES), employer_id: z.string(), recovery_id: z.string().nullable() }))`
      UPDATE webhook_deliveries
      SET attempts = ${attempt}, attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL,
          last_status_code = ${result.statusCode}, last_error = ${result.error},
          -- A final outcome stands even if the subscription stopped meanwhile; a retry does not.
          status = CASE WHEN ${outcome} <> 'pending' THEN ${outcome} WHEN status = 'cancelled' THEN 'cancelled' ELSE 'pending' END,
          next_attempt_at = CASE WHEN ${outcome} = 'pending' AND status <> 'cancelled' THEN ${nextRetryAt}::timestamptz END,
          completed_at = CASE WHEN ${outcome} = 'pending' AND status <> 'cancelled' THEN NULL ELSE now() END
      WHERE delivery_id = ${deliveryId} AND attempt_lease = ${input.lease}
      RETURNING status, employer_id, recovery_id`);
    const status = ended?.status ?? null;
    await insertAttemptLog(tx, { deliveryId, attempt, requestedAt: input.requestedAt, result, nextRetryAt: status === 'pending' ? nextRetryAt : null });
    if (ended?.status === 'pending') await tx.query(sql.unsafe`SELECT ${addDeliveryJob(deliveryId, attempt + 1, nextRetryAt, employerJobArguments(ended.employer_id))}`);
    // A recovery's deliveries go one at a time: this one's end starts the next.
    if ((ended?.status === 'succeeded' || ended?.status === 'failed') && ended.recovery_id !== null) await queueNextRecovered(tx, deliveryId, ended.employer_id);
    return status;
  });
}

/**
 * Recovery after an outage: the subscription's failed deliveries (of events, not direct tests)
 * created since `since` become pending again with a fresh series of retries, numbered in the order
 * they were created, and the first one's job is added. None is picked twice: once picked it is
 * pending, then succeeded or failed anew. Returns how many were picked.
 */
export async function startRecovery(pool: DatabasePool, input: { recoveryId: string; employerId: string; webhookId: string; since: string }): Promise<number> {
  return pool.transaction(async (tx) => {
    const picked = await tx.anyFirst(sql.type(z.object({ delivery_id: z.string() }))`
      SELECT delivery_id FROM webhook_deliveries
      WHERE webhook_id = ${input.webhookId} AND employer_id = ${input.employerId} AND status = 'failed' AND trigger = 'event' AND created_at >= ${input.since}
      ORDER BY created_at, delivery_id
      FOR UPDATE`);
    await tx.query(sql.unsafe`
      INSERT INTO webhook_recoveries (recovery_id, employer_id, webhook_id, since, total)
      VALUES (${input.recoveryId}, ${input.employerId}, ${input.webhookId}, ${input.since}, ${picked.length})`);
    if (picked.length === 0) return 0;
    await tx.query(sql.unsafe`
      UPDATE webhook_deliveries d
      SET status = 'pending', series_start = d.attempts, next_attempt_at = NULL, completed_at = NULL,
          recovery_id = ${input.recoveryId}, recovery_position = p.position
      FROM unnest(${sql.array(picked, 'uuid')}::uuid[]) WITH ORDINALITY AS p(delivery_id, position)
      WHERE d.delivery_id = p.delivery_id`);
    await tx.query(sql.unsafe`
      SELECT ${addDeliveryJob(sql.fragment`d.delivery_id`, sql.fragment`d.attempts + 1`, sql.fragment`now()`, employerJobArguments(input.employerId))}
      FROM webhook_deliveries d WHERE d.delivery_id = ${picked[0]!}`);
    return picked.length;
  });
}

/** Adds the job of the next pending delivery of the recovery `deliveryId` belongs to, if any is left. */
async function queueNextRecovered(tx: CommonQueryMethods, deliveryId: string, employerId: string): Promise<void> {
  await tx.query(sql.unsafe`
    SELECT ${addDeliveryJob(sql.fragment`n.delivery_id`, sql.fragment`n.attempts + 1`, sql.fragment`now()`, employerJobArguments(employerId))}
    FROM webhook_deliveries d
    CROSS JOIN LATERAL (
      SELECT delivery_id, attempts FROM webhook_deliveries
      WHERE recovery_id = d.recovery_id AND recovery_position > d.recovery_position AND status = 'pending'
      ORDER BY recovery_position LIMIT 1
    ) n
    WHERE d.delivery_id = ${deliveryId}`);
}

const recoveryProgress = z.object({
  recovery_id: z.string(),
  since: z.string(),
  requested_at: z.string(),
  total: z.number(),
  succeeded: z.number(),
  failed: z.number(),
  pending: z.number(),
  cancelled: z.number(),
});

/** A recovery's progress from its deliveries' statuses; null for an id of another subscription or none. */
export async function findRecoveryProgress(pool: CommonQueryMethods, input: { employerId: string; webhookId: string; recoveryId: string }) {
  if (!z.uuid().safeParse(input.recoveryId).success) return null;
  return pool.maybeOne(sql.type(recoveryProgress)`
    SELECT r.recovery_id, r.since, r.requested_at, r.total,
           count(*) FILTER (WHERE d.status = 'succeeded')::int AS succeeded, count(*) FILTER (WHERE d.status = 'failed')::int AS failed,
           count(*) FILTER (WHERE d.status = 'pending')::int AS pending, count(*) FILTER (WHERE d.status = 'cancelled')::int AS cancelled
    FROM webhook_recoveries r LEFT JOIN webhook_deliveries d ON d.recovery_id = r.recovery_id
    WHERE r.recovery_id = ${input.recoveryId} AND r.webhook_id = ${input.webhookId} AND r.employer_id = ${input.employerId}
    GROUP BY r.recovery_id`);
}

async function insertAttemptLog(
  tx: CommonQueryMethods,
  input: { deliveryId: string; attempt: number; requestedAt: Date; result: WebhookAttemptResult; nextRetryAt: string | null },
) {
  const { result } = input;
  await tx.query(sql.unsafe`
    INSERT INTO webhook_delivery_attempts (delivery_id, attempt, requested_at, latency_ms, status_code, error, response_body, next_retry_at)
    VALUES (${input.deliveryId}, ${input.attempt}, ${input.requestedAt.toISOString()}, ${result.latencyMs}, ${result.statusCode}, ${result.error},
            ${result.responseBody}, ${input.nextRetryAt})
    ON CONFLICT DO NOTHING`);
}

/** The log of a direct test ping (POST .../test): a finished one-attempt delivery. */
export async function recordTestDelivery(
  pool: DatabasePool,
  input: { deliveryId: string; employerId: string; webhookId: string; timestamp: string; data: Record<string, unknown>; requestedAt: Date; result: WebhookAttemptResult },
): Promise<void> {
  const { result } = input;
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO webhook_deliveries (delivery_id, employer_id, webhook_id, event_id, event_type, event_timestamp, data, trigger, status, attempts,
                                      last_status_code, last_error, created_at, completed_at)
      VALUES (${input.deliveryId}, ${input.employerId}, ${input.webhookId}, NULL, 'test.ping', ${input.timestamp}, ${JSON.stringify(input.data)}::json, 'test',
              ${result.ok ? 'succeeded' : 'failed'}, 1, ${result.statusCode}, ${result.error}, ${input.requestedAt.toISOString()}, now())`);
    await insertAttemptLog(tx, { deliveryId: input.deliveryId, attempt: 1, requestedAt: input.requestedAt, result, nextRetryAt: null });
  });
}

/**
 * Redelivery: a finished delivery becomes pending again with a fresh series of retries (same
 * delivery id, so receivers may deduplicate), taking over an admission ticket of `admittedAs`
 * (src/worker/admission.ts). Returns false when the delivery is still pending.
 */
export async function requeueDelivery(pool: DatabasePool, input: { employerId: string; deliveryId: string; admittedAs: string }): Promise<boolean> {
  const requeued = await pool.maybeOne(sql.type(z.object({ delivery_id: z.string() }))`
    WITH requeued AS (
      UPDATE webhook_deliveries SET status = 'pending', series_start = attempts, next_attempt_at = now(), completed_at = NULL, redelivered_at = now()
      WHERE delivery_id = ${input.deliveryId} AND employer_id = ${input.employerId} AND status <> 'pending'
      RETURNING delivery_id, employer_id, attempts
    ), handed_over AS (
      ${handOverOldestTickets(input.employerId, input.admittedAs, sql.fragment`(SELECT count(*) FROM requeued)`)}
    )
    SELECT delivery_id, ${addDeliveryJob(sql.fragment`requeued.delivery_id`, sql.fragment`requeued.attempts + 1`, sql.fragment`now()`, employerJobArguments(input.employerId))} FROM requeued`);
  return requeued !== null;
}
