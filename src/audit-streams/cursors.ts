// The delivery cursor of each audit stream (audit_stream_cursors, operational: written by the worker,
// never rebuilt). One run at a time per stream holds its claim (the worker process's lease, as
// webhook attempts do: src/worker/lease.ts); every move of delivered_seq is a compare-and-set on the
// position the run read, in one short statement, so a cursor never moves backwards or skips.
import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { leaseAbandoned, unlockJobsOfDeadWorkers } from '../worker/lease.ts';

export type ClaimedCursor = { runId: string; deliveredSeq: bigint; pendingThroughSeq: bigint | null; consecutiveFailures: number };

/**
 * A claim this old is abandoned even if its process lives (its release failed): a run sends at most
 * 20 batches of one 10-second attempt each (./delivery.ts).
 */
const STALE_CLAIM = sql.fragment`interval '10 minutes'`;

const cursorRow = z.object({ delivered_seq: z.bigint(), pending_through_seq: z.bigint().nullable(), consecutive_failures: z.number() });

/** Claims the stream's cursor for this run (created at `startAfterSeq`), or null while a live run holds it. */
export async function claimCursor(
  db: CommonQueryMethods,
  input: { streamId: string; employerId: string; startAfterSeq: bigint; lease: number; worker: string | null },
): Promise<ClaimedCursor | null> {
  const runId = randomUUID();
  const row = await db.maybeOne(sql.type(cursorRow)`
    INSERT INTO audit_stream_cursors AS c (stream_id, employer_id, delivered_seq, run_id, claimed_at, lease, worker)
    VALUES (${input.streamId}, ${input.employerId}, ${input.startAfterSeq.toString()}::bigint, ${runId}, now(), ${input.lease}, ${input.worker})
    ON CONFLICT (stream_id) DO UPDATE SET run_id = EXCLUDED.run_id, claimed_at = now(), lease = EXCLUDED.lease, worker = EXCLUDED.worker
    WHERE c.run_id IS NULL OR c.claimed_at < now() - ${STALE_CLAIM} OR ${leaseAbandoned(sql.fragment`c.lease`)}
    RETURNING delivered_seq, pending_through_seq, consecutive_failures`);
  return row && { runId, deliveredSeq: row.delivered_seq, pendingThroughSeq: row.pending_through_seq, consecutiveFailures: row.consecutive_failures };
}

/** Records the batch about to be sent (entries after deliveredSeq through throughSeq); false if the cursor moved. */
export async function markPending(db: CommonQueryMethods, input: { streamId: string; deliveredSeq: bigint; throughSeq: bigint }): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    UPDATE audit_stream_cursors SET pending_through_seq = ${input.throughSeq.toString()}::bigint
    WHERE stream_id = ${input.streamId} AND delivered_seq = ${input.deliveredSeq.toString()}::bigint`);
  return result.rowCount === 1;
}

/** The destination acknowledged the batch: the cursor moves past it; false if it had moved already. */
export async function markDelivered(db: CommonQueryMethods, input: { streamId: string; deliveredSeq: bigint; throughSeq: bigint; entries: number }): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    UPDATE audit_stream_cursors
    SET delivered_seq = ${input.throughSeq.toString()}::bigint, pending_through_seq = NULL, delivered_entries = delivered_entries + ${input.entries},
        last_delivered_at = now(), consecutive_failures = 0, last_status_code = NULL, last_error = NULL, next_attempt_at = NULL
    WHERE stream_id = ${input.streamId} AND delivered_seq = ${input.deliveredSeq.toString()}::bigint`);
  return result.rowCount === 1;
}

export async function markFailed(db: CommonQueryMethods, input: { streamId: string; statusCode: number | null; error: string; nextAttemptAt: Date }): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE audit_stream_cursors
    SET consecutive_failures = consecutive_failures + 1, last_failure_at = now(), last_status_code = ${input.statusCode},
        last_error = ${input.error}, next_attempt_at = ${input.nextAttemptAt.toISOString()}
    WHERE stream_id = ${input.streamId}`);
}

/** Ends this run's claim (only its own). */
export async function releaseCursor(db: CommonQueryMethods, input: { streamId: string; runId: string }): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE audit_stream_cursors SET run_id = NULL, claimed_at = NULL, lease = NULL, worker = NULL WHERE stream_id = ${input.streamId} AND run_id = ${input.runId}`);
}

export async function deleteCursor(db: CommonQueryMethods, streamId: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM audit_stream_cursors WHERE stream_id = ${streamId}`);
}

/**
 * Claims of worker processes that died (SIGKILL, a lost host): cleared, and their graphile-worker
 * jobs unlocked now rather than after graphile-worker's 4 hours. Returns how many.
 */
export async function recoverAbandonedClaims(pool: DatabasePool): Promise<number> {
  return pool.transaction(async (tx) => {
    const workers = await tx.anyFirst(sql.type(z.object({ worker: z.string().nullable() }))`
      UPDATE audit_stream_cursors c SET run_id = NULL, claimed_at = NULL, lease = NULL, worker = NULL
      FROM (SELECT stream_id, worker FROM audit_stream_cursors WHERE lease IS NOT NULL AND ${leaseAbandoned(sql.fragment`lease`)} FOR UPDATE) old
      WHERE c.stream_id = old.stream_id
      RETURNING old.worker`);
    if (workers.length > 0) await unlockJobsOfDeadWorkers(tx, workers);
    return workers.length;
  });
}
