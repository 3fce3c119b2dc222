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
  recovery_id: z.string().nullable(),
});
export type ClaimedAttempt = z.infer<typeof claimedRow>;

/** First attempts a fan-out makes itself: claimed under this process's lease for the job's worker, at most `max` of them. */
export type DirectAttempts = { lease: number; worker: string | null; max: number };

/**
 * Fan-out of one domain event: one pending delivery per active subscription of the event's tenant
 * that asked for it, in one statement. With `direct`, the first `direct.max` of them are created
 * claimed for their first attempt (the caller makes it, src/webhooks/tasks.ts) and returned; every
 * other gets its first attempt's job. The (webhook, event) uniqueness makes a re-run add nothing.
 * With `admittedAs`, each delivery created takes over an admission ticket of that kind
 * (src/worker/admission.ts).
 */
export async function enqueueEventDeliveries(
  pool: CommonQueryMethods,
  input: {
    employerId: string; eventId: string; webhookEvent: string; timestamp: string; data: Record<string, unknown>; onlyWebhookId: string | null;
    admittedAs?: string | undefined; direct?: DirectAttempts;
  },
): Promise<ClaimedAttempt[]> {
  const target = input.onlyWebhookId === null ? sql.fragment`${input.webhookEvent} = ANY (s.events)` : sql.fragment`s.id = ${input.onlyWebhookId}`;
  const { lease = null, worker = null, max = 0 } = input.direct ?? {};
  const rows = await pool.any(sql.unsafe`
    WITH targets AS (
      SELECT s.employer_id, s.id, row_number() OVER (ORDER BY s.id) <= ${max} AS direct
      FROM webhook_subscriptions s
      WHERE s.employer_id = ${input.employerId} AND s.status = 'active' AND ${target}
    ), created AS (
      INSERT INTO webhook_deliveries (delivery_id, employer_id, webhook_id, event_id, event_type, event_timestamp, data, trigger, status, next_attempt_at,
                                      attempt_lease, attempt_worker, attempt_started_at)
      SELECT gen_random_uuid(), t.employer_id, t.id, ${input.eventId}, ${input.webhookEvent}, ${input.timestamp}, ${JSON.stringify(input.data)}::json,
             'event', 'pending', now(),
             CASE WHEN t.direct THEN ${lease}::int END, CASE WHEN t.direct THEN ${worker}::text END, CASE WHEN t.direct THEN now() END
      FROM targets t
      ON CONFLICT (webhook_id, event_id) DO NOTHING
      RETURNING delivery_id, employer_id, webhook_id, event_type, event_timestamp, data, series_start, attempt_lease
    ), jobs AS (
      SELECT ${addDeliveryJob(sql.fragment`created.delivery_id`, sql.fragment`1`, sql.fragment`now()`, employerJobArguments(input.employerId))}
      FROM created WHERE created.attempt_lease IS NULL
    )${input.admittedAs === undefined ? sql.fragment`` : sql.fragment`, handed_over AS (
      ${handOverOldestTickets(input.employerId, input.admittedAs, sql.fragment`(SELECT count(*) FROM created)`)}
    )`}, claimed AS (
      SELECT c.delivery_id, c.employer_id, c.webhook_id, c.event_type, c.event_timestamp, c.data, c.series_start, s.url, s.sealed_secret,
             ${previousSecretInOverlap} AS previous_sealed_secret, s.failure_count, NULL::uuid AS recovery_id
      FROM created c JOIN webhook_subscriptions s ON s.id = c.webhook_id
      WHERE c.attempt_lease IS NOT NULL
    )
    -- One row at least, so that the jobs are added (a CTE nobody reads is not run) even when none is claimed.
    SELECT claimed.* FROM (SELECT count(*) FROM jobs) queued LEFT JOIN claimed ON true`);
  return (rows as { delivery_id: string | null }[]).filter((row) => row.delivery_id !== null).map((row) => claimedRow.parse(row));
}

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
      ${previousSecretInOverlap} AS previous_sealed_secret, s.failure_count, d.recovery_id`);
}

/**
 * Gives up this process's claims on attempts that failed before their end was recorded, so they can
 * be claimed again: by their job's retry (graphile-worker's backoff), or with `requeue` (attempts a
 * fan-out made itself, which have no job) by a job added for each.
 */
export async function releaseAttempts(pool: CommonQueryMethods, input: { deliveryIds: string[]; lease: number; requeue: boolean }): Promise<void> {
  await pool.query(sql.unsafe`
    WITH released AS (
      UPDATE webhook_deliveries SET attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL
      WHERE delivery_id = ANY (${sql.array(input.deliveryIds, 'uuid')}) AND attempt_lease = ${input.lease}
      RETURNING delivery_id, employer_id, attempts
    )
    SELECT ${addDeliveryJob(sql.fragment`released.delivery_id`, sql.fragment`released.attempts + 1`, sql.fragment`now()`, employerJobFlagArgument(sql.fragment`released.employer_id`))}
    FROM released WHERE ${input.requeue}`);
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
 * and run again: same delivery, same x-webhook-id. Their jobs are unlocked, and each gets a job too,
 * for the attempts a fan-out job made itself (a job already waiting under the delivery's key is
 * replaced; the claim lets only one of two jobs for the same attempt run it). Returns how many.
 */
export async function recoverInterruptedAttempts(pool: DatabasePool): Promise<number> {
  return pool.transaction(async (tx) => {
    const workers = await tx.anyFirst(sql.type(z.object({ attempt_worker: z.string().nullable() }))`
      WITH orphaned AS (
        SELECT d.delivery_id, d.attempt_worker FROM webhook_deliveries d
        WHERE d.attempt_lease IS NOT NULL AND ${leaseAbandoned(sql.fragment`d.attempt_lease`)}
        FOR UPDATE OF d SKIP LOCKED
      ), released AS (
        UPDATE webhook_deliveries d SET attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL
        FROM orphaned o WHERE d.delivery_id = o.delivery_id
        RETURNING d.delivery_id, d.employer_id, d.attempts, d.status, o.attempt_worker
      ), jobs AS (
        SELECT ${addDeliveryJob(sql.fragment`delivery_id`, sql.fragment`attempts + 1`, sql.fragment`now()`, employerJobFlagArgument(sql.fragment`employer_id`))}
        FROM released WHERE status = 'pending'
      )
      SELECT released.attempt_worker FROM released CROSS JOIN (SELECT count(*) FROM jobs) queued`);
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

/** What ends an attempt: its result, when its delivery should be tried again (null: never), and whether it is of a recovery. */
export type FinishedAttempt = { deliveryId: string; attempt: number; requestedAt: Date; result: WebhookAttemptResult; nextRetryAt: Date | null; ofRecovery: boolean };

/**
 * Ends attempts of one employer's deliveries: their log entries and the deliveries' new states in
 * one statement, and in the same transaction the next attempts' jobs of those with `nextRetryAt`
 * that were not cancelled meanwhile, and of a recovery the next delivery's (attempts with neither
 * need no transaction: one round trip). An attempt this process no longer held (its lease was lost
 * and another worker re-ran it) is logged only.
 */
export async function finishAttempts(pool: DatabasePool, input: { employerId: string; lease: number; attempts: FinishedAttempt[] }): Promise<void> {
  const column = <T>(value: (attempt: FinishedAttempt) => T) => input.attempts.map(value);
  const nextRetryAt = (attempt: FinishedAttempt) => (attempt.result.ok ? null : attempt.nextRetryAt?.toISOString() ?? null);
  const outcome = (attempt: FinishedAttempt): DeliveryStatus => (attempt.result.ok ? 'succeeded' : nextRetryAt(attempt) === null ? 'failed' : 'pending');
  const ended = z.object({ delivery_id: z.string(), status: z.enum(DELIVERY_STATUSES), recovery_id: z.string().nullable(), attempt: z.number(), next_retry_at: z.string().nullable() });
  const finish = async (tx: CommonQueryMethods) => {
    const rows = await tx.any(sql.type(ended)`
      WITH finished AS (
        SELECT * FROM unnest(${sql.array(column((a) => a.deliveryId), 'uuid')}, ${sql.array(column((a) => a.attempt), 'int4')},
                             ${sql.array(column((a) => a.requestedAt.toISOString()), 'timestamptz')}, ${sql.array(column((a) => a.result.latencyMs), 'int4')},
                             ${sql.array(column((a) => a.result.statusCode), 'int4')}, ${sql.array(column((a) => a.result.error), 'text')},
                             ${sql.array(column((a) => a.result.responseBody), 'text')}, ${sql.array(column(outcome), 'text')},
                             ${sql.array(column(nextRetryAt), 'timestamptz')})
          AS f(delivery_id, attempt, requested_at, latency_ms, status_code, error, response_body, outcome, next_retry_at)
      ), ended AS (
        UPDATE webhook_deliveries d
        SET attempts = f.attempt, attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL,
            last_status_code = f.status_code, last_error = f.error,
            -- A final outcome stands even if the subscription stopped meanwhile; a retry does not.
            status = CASE WHEN f.outcome <> 'pending' THEN f.outcome WHEN d.status = 'cancelled' THEN 'cancelled' ELSE 'pending' END,
            next_attempt_at = CASE WHEN f.outcome = 'pending' AND d.status <> 'cancelled' THEN f.next_retry_at END,
            completed_at = CASE WHEN f.outcome = 'pending' AND d.status <> 'cancelled' THEN NULL ELSE now() END
        FROM finished f
        WHERE d.delivery_id = f.delivery_id AND d.attempt_lease = ${input.lease}
        RETURNING d.delivery_id, d.status, d.recovery_id
      ), logged AS (
        INSERT INTO webhook_delivery_attempts (delivery_id, attempt, requested_at, latency_ms, status_code, error, response_body, next_retry_at)
        SELECT f.delivery_id, f.attempt, f.requested_at, f.latency_ms, f.status_code, f.error, f.response_body,
               CASE WHEN e.status = 'pending' THEN f.next_retry_at END
        FROM finished f LEFT JOIN ended e ON e.delivery_id = f.delivery_id
        ON CONFLICT DO NOTHING
      )
      SELECT e.delivery_id, e.status, e.recovery_id, f.attempt, f.next_retry_at::text FROM ended e JOIN finished f ON f.delivery_id = e.delivery_id`);
    const retries = rows.filter((row) => row.status === 'pending');
    if (retries.length > 0) {
      await tx.query(sql.unsafe`
        SELECT ${addDeliveryJob(sql.fragment`r.delivery_id`, sql.fragment`r.attempt + 1`, sql.fragment`r.next_retry_at`, employerJobArguments(input.employerId))}
        FROM unnest(${sql.array(retries.map((row) => row.delivery_id), 'uuid')}, ${sql.array(retries.map((row) => row.attempt), 'int4')},
                    ${sql.array(retries.map((row) => row.next_retry_at), 'timestamptz')}) AS r(delivery_id, attempt, next_retry_at)`);
    }
    // A recovery's deliveries go one at a time: this one's end starts the next.
    for (const row of rows) {
      if ((row.status === 'succeeded' || row.status === 'failed') && row.recovery_id !== null) await queueNextRecovered(tx, row.delivery_id, input.employerId);
    }
  };
  if (input.attempts.some((attempt) => nextRetryAt(attempt) !== null || attempt.ofRecovery)) await pool.transaction(finish);
  else await finish(pool);
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
