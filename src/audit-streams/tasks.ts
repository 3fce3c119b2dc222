// The audit streams' graphile-worker tasks and how their jobs are queued:
// - deliver: one run of one stream (./delivery.ts); one job per stream at a time (job key
//   `audit_stream:<id>`), a run at a time by the cursor's claim, then queued again: at once when
//   entries are left, at the retry's time after a failure;
// - the kick (auditStreamKicks): a projection over every event that, in the transaction moving its
//   checkpoint, queues the delivery of each active stream of the batch's employers, carrying the
//   batch's position; the run first waits (bounded) for the audit-streams, audit and audit-chain
//   read models to pass it, so the stream and its entries are there to read. Queuing keeps a waiting retry's time
//   (preserve_run_at): a kick never hurries a backoff;
// - sweep: every minute and at a worker's start, frees the claims of dead worker processes (and
//   their jobs) and queues every active stream that is behind: the safety net of the kicks.
import type { Task, TaskList } from 'graphile-worker';
import { sql, type CommonQueryMethods } from 'slonik';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { activeStreamsBehind } from '../../projections/audit-streams/queries.ts';
import type { AppContext } from '../app-context.ts';
import { formatPosition, parsePosition, type Position, type RecordedEvent } from '../event-store/port.ts';
import type { Projection } from '../event-store/projection.ts';
import { employerJobArguments, employerJobFlagArgument } from '../worker/fair-share.ts';
import type { ProcessLease } from '../worker/lease.ts';
import { recoverAbandonedClaims } from './cursors.ts';
import { runStream } from './delivery.ts';

export const DELIVER_TASK = 'audit_stream_deliver';
export const SWEEP_TASK = 'audit_streams_sweep';
/** The read models a run reads: the stream itself, and its entries. */
const READ_MODELS = ['audit-streams', 'audit', 'audit-chain'];

const deliverPayload = z.object({ streamId: z.string(), employerId: z.string(), after: z.string().optional() });
const jobKeyOf = (streamId: string) => `audit_stream:${streamId}`;

/**
 * Queues a run of the stream: now, or at `runAt`, reading once the audit read models passed `after`;
 * `mode` preserve_run_at leaves a waiting retry's time alone.
 */
export async function queueStreamRun(
  db: CommonQueryMethods,
  input: { streamId: string; employerId: string; runAt?: Date; after?: Position; mode: 'replace' | 'preserve_run_at' },
) {
  const payload = { streamId: input.streamId, employerId: input.employerId, ...(input.after ? { after: formatPosition(input.after) } : {}) };
  await db.query(sql.unsafe`
    SELECT graphile_worker.add_job(${DELIVER_TASK}, ${sql.jsonb(payload)}::json,
      run_at => ${input.runAt?.toISOString() ?? null}::timestamptz, job_key => ${jobKeyOf(input.streamId)}, job_key_mode => ${input.mode},
      ${employerJobArguments(input.employerId)})`);
}

export const auditStreamKicks: Projection = {
  name: 'audit-stream-kicks',
  tables: [],
  // Every event: which are audited is the audit projection's to know; one statement per batch here.
  eventTypes: 'all',
  rebuildable: false,
  awaitedByCommands: false,
  async apply(tx, events: RecordedEvent[]) {
    const employers = [...new Set(events.flatMap((event) => (event.metadata.tenantId ? [event.metadata.tenantId] : [])))];
    if (employers.length === 0) return;
    const last = events.at(-1)!.position;
    await tx.query(sql.unsafe`
      SELECT count(graphile_worker.add_job(${DELIVER_TASK},
        json_build_object('streamId', s.id, 'employerId', s.employer_id, 'after', ${formatPosition(last)}::text),
        job_key => 'audit_stream:' || s.id, job_key_mode => 'preserve_run_at', ${employerJobFlagArgument(sql.fragment`s.employer_id`)}))
      FROM audit_streams s WHERE s.status = 'active' AND s.employer_id = ANY(${sql.array(employers, 'text')})`);
  },
};

export function auditStreamTasks(ctx: AppContext, processLease: ProcessLease, dispatcher: Dispatcher): TaskList {
  const deliver: Task = async (payload, helpers) => {
    const job = deliverPayload.parse(payload);
    if (job.after !== undefined) await ctx.waitForReadModels(parsePosition(job.after), READ_MODELS);
    const lease = (await processLease.held()).key();
    const outcome = await runStream({ ctx, dispatcher }, { streamId: job.streamId, lease, worker: helpers.job.locked_by });
    const stream = { streamId: job.streamId, employerId: job.employerId };
    if (outcome.next === 'retry') await queueStreamRun(ctx.db.slonik, { ...stream, runAt: outcome.at, mode: 'replace' });
    // Entries left, or sealed while this run held the claim (their kick found it held).
    else if (outcome.next === 'more' || (outcome.next === 'idle' && (await isBehind(job)))) await queueStreamRun(ctx.db.slonik, { ...stream, mode: 'replace' });
  };
  const isBehind = async (job: { streamId: string; employerId: string }) =>
    (await activeStreamsBehind(ctx.db.slonik, job.employerId)).some((stream) => stream.id === job.streamId);

  const sweep: Task = async () => {
    await processLease.held();
    const recovered = await recoverAbandonedClaims(ctx.db.slonik);
    if (recovered > 0) ctx.logger.warn({ recovered }, 'audit stream runs of a stopped worker process will run again');
    for (const stream of await activeStreamsBehind(ctx.db.slonik, null)) {
      await queueStreamRun(ctx.db.slonik, { streamId: stream.id, employerId: stream.employer_id, mode: 'preserve_run_at' });
    }
  };

  // At start, not only on the minute: a worker replacing a dead one frees its claims at once.
  void processLease.held()
    .then(() => ctx.db.slonik.query(sql.unsafe`SELECT graphile_worker.add_job(${SWEEP_TASK}, '{}'::json, job_key => ${SWEEP_TASK})`))
    .catch((error: unknown) => ctx.logger.error({ err: error }, 'audit streams sweep not queued at start'));

  return { [DELIVER_TASK]: deliver, [SWEEP_TASK]: sweep };
}
