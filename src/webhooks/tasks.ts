// The webhooks capability's graphile-worker tasks:
// - fan-out: one committed domain event (from the job dispatcher) -> one delivery per subscription,
//   whose first attempts (up to DIRECT_ATTEMPTS_MAX) it makes itself, concurrently, and ends together:
//   a job per delivery would cost its fetch, claim and completion round trips per receiver;
// - deliver: one attempt of one delivery (the first of those past DIRECT_ATTEMPTS_MAX, a retry, a
//   redelivery), then its log entry and, on failure, the next attempt's job;
// - recover: re-runs attempts whose worker process died (src/worker/lease.ts).
import type { Task, TaskList } from 'graphile-worker';
import { sql } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { eventOfJob } from '../worker/dispatcher.ts';
import { attemptDelivery, notSent } from './attempt.ts';
import { deliveryWorkerContext, recordDeliveryOutcome } from './commands.ts';
import {
  cancelIfSubscriptionStopped,
  claimAttempt,
  DELIVER_TASK,
  deliverJobPayload,
  enqueueEventDeliveries,
  finishAttempts,
  recoverInterruptedAttempts,
  releaseAttempts,
  requeueAbandonedAttempts,
  type ClaimedAttempt,
  type FinishedAttempt,
} from './deliveries.ts';
import type { WebhookEventMappings } from './event-types.ts';
import { deliveryMetrics } from './metrics.ts';
import { retryDelayMs } from './retry-schedule.ts';
import type { WebhookRuntime } from './runtime.ts';
import type { ProcessLease, WorkerLease } from '../worker/lease.ts';

export const FAN_OUT_TASK = 'webhook_fan_out';
const RECOVER_TASK = 'webhook_recover_attempts';
const RECOVERY_INTERVAL_MS = 60_000;
/** First attempts one fan-out job makes itself at most; its event's other deliveries get a job each. */
export const DIRECT_ATTEMPTS_MAX = 32;

/** A claim held this long is abandoned: an attempt takes at most WEBHOOK_ATTEMPT_TIMEOUT_MS (10 s) plus its recording. */
const ABANDONED_CLAIM_MS = 10 * 60_000;

/** The part of the dispatcher's EventJobPayload (src/worker/dispatcher.ts) fan-out reads. */
const eventJobPayload = z.object({ eventId: z.uuid(), type: z.string(), streamName: z.string() });

export function webhookTasks(ctx: AppContext, runtime: WebhookRuntime, processLease: ProcessLease, mappings: WebhookEventMappings): TaskList {
  const metrics = deliveryMetrics(ctx.metrics);
  // Once the process holds its lease: recover attempts of processes that died before this one started, then every minute.
  let leaseWithRecovery: Promise<WorkerLease> | null = null;
  const workerLease = () =>
    (leaseWithRecovery ??= (async () => {
      const lease = await processLease.held();
      await ctx.db.slonik.query(sql.unsafe`SELECT graphile_worker.add_job(${RECOVER_TASK}, '{}'::json, job_key => ${RECOVER_TASK})`);
      return lease;
    })());

  const fanOut: Task = (payload, helpers) =>
    runtime.track(async () => {
      const job = eventJobPayload.parse(payload);
      const mapping = mappings[job.type];
      if (!mapping) return;
      const event = await eventOfJob(ctx.eventStore, job);
      if (!event) throw new Error(`event ${job.eventId} is not in stream ${job.streamName}`);
      // Webhooks go only to the tenant that owns the event.
      const employerId = event.metadata.tenantId;
      if (employerId === null) return;
      const lease = (await workerLease()).key();
      const claimed = await enqueueEventDeliveries(ctx.db.slonik, {
        employerId,
        eventId: event.eventId,
        webhookEvent: mapping.webhookEvent,
        timestamp: event.metadata.occurredAt,
        data: mapping.data(event),
        onlyWebhookId: mapping.onlyWebhookId?.(event) ?? null,
        admittedAs: mapping.admittedAs,
        direct: { lease, worker: helpers.job.locked_by, max: DIRECT_ATTEMPTS_MAX },
      });
      // These attempts have no job: those not ended are given one.
      await attemptClaimed(employerId, claimed.map((attempt) => ({ claimed: attempt, attempt: 1 })), lease, { requeue: true });
    });

  const deliver: Task = (payload, helpers) =>
    runtime.track(async () => {
      const { deliveryId, attempt } = deliverJobPayload.parse(payload);
      const lease = (await workerLease()).key();
      const claimed = await claimAttempt(ctx.db.slonik, { deliveryId, attempt, lease, worker: helpers.job.locked_by });
      if (!claimed) return cancelIfSubscriptionStopped(ctx.db.slonik, deliveryId);
      // The job's retry (graphile-worker's backoff) claims the same attempt again.
      await attemptClaimed(claimed.employer_id, [{ claimed, attempt }], lease, { requeue: false });
    });

  /** One attempt: sent, and the subscription's part of its outcome recorded; what ends it in the delivery log. */
  const attemptOne = async (claimed: ClaimedAttempt, attempt: number): Promise<FinishedAttempt> => {
    const { delivery_id: deliveryId } = claimed;
    const target = {
      deliveryId,
      employerId: claimed.employer_id,
      webhookId: claimed.webhook_id,
      eventType: claimed.event_type,
      timestamp: claimed.event_timestamp,
      data: claimed.data,
      url: claimed.url,
      sealedSecret: claimed.sealed_secret,
      sealedPreviousSecret: claimed.previous_sealed_secret,
    };
    // Preparing the request can fail too (a secret sealed under another ENCRYPTION_KEY): that is a
    // failed attempt like any other, logged and retried on the schedule, so the delivery ends.
    const { requestedAt, result } = await attemptDelivery({ dispatcher: runtime.dispatcher, encryptionKey: ctx.encryptionKey }, target).catch((error: unknown) => {
      ctx.logger.error({ err: error, deliveryId, attempt }, 'webhook attempt could not be prepared');
      return { requestedAt: new Date(), result: notSent(error) };
    });
    const delayMs = result.ok || result.gone
      ? null
      : retryDelayMs(attempt - claimed.series_start, { baseMs: ctx.config.WEBHOOK_RETRY_BASE_MS, retryAfterMs: result.retryAfterMs });

    // The subscription's part first, then the log entry that ends the attempt: each outcome is
    // recorded at most once per delivery, so if this process dies in between and the attempt runs
    // again, nothing is counted twice.
    const delivery = { employerId: claimed.employer_id, webhookId: claimed.webhook_id, deliveryId };
    if (result.ok && claimed.failure_count > 0) await recordDeliveryOutcome(ctx, deliveryWorkerContext(delivery), { outcome: 'succeeded', ...delivery });
    else if (result.gone) await recordDeliveryOutcome(ctx, deliveryWorkerContext(delivery), { outcome: 'gone', ...delivery });
    else if (!result.ok && delayMs === null) await recordDeliveryOutcome(ctx, deliveryWorkerContext(delivery), { outcome: 'exhausted', ...delivery });
    return { deliveryId, attempt, requestedAt, result, nextRetryAt: delayMs === null ? null : new Date(Date.now() + delayMs), ofRecovery: claimed.recovery_id !== null };
  };

  /**
   * Makes claimed attempts of one employer concurrently and ends them in one transaction. A claim left
   * behind would keep its delivery pending with no attempt for good: an attempt whose end could not
   * be recorded is released (with `requeue`, with a job of its own) to run again, and the error thrown.
   */
  const attemptClaimed = async (employerId: string, claims: { claimed: ClaimedAttempt; attempt: number }[], lease: number, { requeue }: { requeue: boolean }) => {
    if (claims.length === 0) return;
    const outcomes = await Promise.allSettled(claims.map(({ claimed, attempt }) => attemptOne(claimed, attempt)));
    const made = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    let failure = outcomes.find((outcome) => outcome.status === 'rejected')?.reason as unknown;
    const ended = new Set<string>();
    if (made.length > 0) {
      try {
        await finishAttempts(ctx.db.slonik, { employerId, lease, attempts: made });
        for (const { deliveryId } of made) ended.add(deliveryId);
        outcomes.forEach((outcome, index) => {
          if (outcome.status !== 'fulfilled') return;
          const { result, nextRetryAt } = outcome.value;
          metrics.attempted(result.ok ? 'delivered' : result.gone ? 'gone' : nextRetryAt === null ? 'exhausted' : 'retrying', claims[index]!.claimed.event_timestamp);
        });
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure === undefined) return;
    const unfinished = claims.map(({ claimed }) => claimed.delivery_id).filter((deliveryId) => !ended.has(deliveryId));
    await releaseAttempts(ctx.db.slonik, { deliveryIds: unfinished, lease, requeue }).catch((releaseError: unknown) =>
      ctx.logger.error({ err: releaseError, deliveryIds: unfinished }, 'webhook attempt claims not released; the recovery task requeues them'));
    throw failure;
  };

  const recover: Task = async (_payload, helpers) => {
    await workerLease();
    const recovered = await recoverInterruptedAttempts(ctx.db.slonik);
    if (recovered > 0) ctx.logger.warn({ recovered }, 'webhook attempts of a stopped worker process will run again');
    const requeued = await requeueAbandonedAttempts(ctx.db.slonik, ABANDONED_CLAIM_MS);
    if (requeued > 0) ctx.logger.warn({ requeued }, 'abandoned webhook attempt claims released; their attempts will run again');
    await helpers.addJob(RECOVER_TASK, {}, { jobKey: RECOVER_TASK, runAt: new Date(Date.now() + RECOVERY_INTERVAL_MS) });
  };

  // Start the lease with the worker, not with its first job, so recovery runs at start-up.
  void workerLease().catch((error) => ctx.logger.error({ err: error }, 'webhook worker lease not acquired'));

  return { [FAN_OUT_TASK]: fanOut, [DELIVER_TASK]: deliver, [RECOVER_TASK]: recover };
}
