// One run of an audit stream's delivery: from its cursor, batch after batch, in chain order. What is
// guaranteed (test/audit-streams/delivery.test.ts):
// - order: one run per stream at a time (the cursor's claim), entries sent in chain seq order, the
//   cursor moved only after a 2xx and only forward (compare-and-set), so a batch is never sent before
//   the one ahead of it is acknowledged;
// - nothing missing: the cursor moves past exactly the entries acknowledged;
// - duplicates only of a whole batch: the batch is recorded (pending_through_seq) before it is sent,
//   so a retry, or the next worker after a crash, sends exactly the same entries with the same batch
//   id. A receiver that acknowledged a batch whose 2xx never reached us sees it once more; dropping
//   batch ids it has (x-audit-stream-batch-id) makes delivery exactly once for it.
import { v5 as uuidv5 } from 'uuid';
import type { Dispatcher } from 'undici';
import { entriesAfter } from '../../projections/audit-streams/entries.ts';
import { auditStreamTarget, type AuditStreamTarget } from '../../projections/audit-streams/queries.ts';
import type { AppContext } from '../app-context.ts';
import { decryptSecret } from '../crypto/secret-box.ts';
import { sendWebhookAttempt } from '../webhooks/send.ts';
import { claimCursor, deleteCursor, markDelivered, markFailed, markPending, releaseCursor, type ClaimedCursor } from './cursors.ts';
import { batchEntries, buildBatchRequest, DATADOG_MAX_ENTRIES } from './presets.ts';

/** Batches one run sends at most before it hands the worker to other jobs (and queues itself again). */
const BATCHES_PER_RUN = 20;
const RETRY_MAX_MS = 15 * 60_000;
/** Namespace of batch ids: uuid v5 of "<streamId>:<after seq>:<through seq>". */
const BATCH_ID_NAMESPACE = '2f0f5b8e-6c1a-4d0e-9a57-3c8e1f6b2d41';

/** idle: nothing to send now; held: another run has the stream; more: entries left after this run's batches; retry: a batch failed. */
export type StreamRunOutcome = { next: 'idle' } | { next: 'held' } | { next: 'more' } | { next: 'retry'; at: Date };

export function batchIdOf(streamId: string, afterSeq: bigint, throughSeq: bigint): string {
  return uuidv5(`${streamId}:${afterSeq}:${throughSeq}`, BATCH_ID_NAMESPACE);
}

export function retryDelayMs(failures: number, baseMs: number, retryAfterMs: number | null): number {
  const backoff = Math.min(RETRY_MAX_MS, baseMs * 2 ** Math.max(0, failures - 1));
  return retryAfterMs === null ? backoff : Math.min(RETRY_MAX_MS, Math.max(backoff, retryAfterMs));
}

export async function runStream(
  deps: { ctx: AppContext; dispatcher: Dispatcher },
  input: { streamId: string; lease: number; worker: string | null },
): Promise<StreamRunOutcome> {
  const { ctx } = deps;
  const db = ctx.db.slonik;
  const target = await auditStreamTarget(db, input.streamId);
  if (target === null) {
    await deleteCursor(db, input.streamId);
    return { next: 'idle' };
  }
  // Paused, or starting `latest` before its creation entry is sealed (that entry's kick runs it).
  if (target.status !== 'active' || target.start_after_seq === null) return { next: 'idle' };
  const cursor = await claimCursor(db, { streamId: target.id, employerId: target.employer_id, startAfterSeq: target.start_after_seq, lease: input.lease, worker: input.worker });
  // Another run holds it; it queues the stream again when it ends with entries left.
  if (cursor === null) return { next: 'held' };
  try {
    return await sendBatches(deps, target, cursor);
  } finally {
    await releaseCursor(db, { streamId: target.id, runId: cursor.runId });
  }
}

async function sendBatches(deps: { ctx: AppContext; dispatcher: Dispatcher }, claimed: AuditStreamTarget, cursor: ClaimedCursor): Promise<StreamRunOutcome> {
  const { ctx } = deps;
  const db = ctx.db.slonik;
  let target = claimed;
  const maxEntries = target.preset === 'datadog' ? Math.min(DATADOG_MAX_ENTRIES, ctx.config.AUDIT_STREAM_BATCH_MAX_ENTRIES) : ctx.config.AUDIT_STREAM_BATCH_MAX_ENTRIES;
  const host = new URL(ctx.config.PUBLIC_BASE_URL).hostname;
  let { deliveredSeq, pendingThroughSeq } = cursor;
  let failures = cursor.consecutiveFailures;
  for (let batch = 0; batch < BATCHES_PER_RUN; batch += 1) {
    // Read again before each further batch: a stream paused, deleted or given a new URL or token meanwhile.
    if (batch > 0) {
      const current = await auditStreamTarget(db, target.id);
      if (current === null) await deleteCursor(db, target.id);
      if (current?.status !== 'active') return { next: 'idle' };
      target = current;
    }
    const read = await entriesAfter(db, { employerId: target.employer_id, afterSeq: deliveredSeq, throughSeq: pendingThroughSeq, limit: maxEntries });
    // A batch in flight is sent again whole; a new one is cut to the byte bound.
    const entries = pendingThroughSeq === null ? batchEntries(target.preset, read, { host, maxBytes: ctx.config.AUDIT_STREAM_BATCH_MAX_BYTES }) : read;
    const last = entries.at(-1);
    if (last === undefined) return { next: 'idle' };
    const throughSeq = BigInt(last.chain.seq);
    if (pendingThroughSeq === null && !(await markPending(db, { streamId: target.id, deliveredSeq, throughSeq }))) return { next: 'idle' };
    pendingThroughSeq = throughSeq;

    const batchId = batchIdOf(target.id, deliveredSeq, throughSeq);
    let result;
    try {
      const secret = decryptSecret(target.sealed_secret, ctx.encryptionKey, target.id);
      const request = buildBatchRequest({ preset: target.preset, url: target.url, secret, batchId, entries, host, signedAt: new Date() });
      result = await sendWebhookAttempt({ ...request, dispatcher: deps.dispatcher });
    } catch (error) {
      // A credential sealed under another ENCRYPTION_KEY: a failed attempt like any other, retried.
      result = { ok: false, statusCode: null, responseBody: '', error: error instanceof Error ? error.message : String(error), retryAfterMs: null };
    }
    if (!result.ok) {
      failures += 1;
      const at = new Date(Date.now() + retryDelayMs(failures, ctx.config.AUDIT_STREAM_RETRY_BASE_MS, result.retryAfterMs));
      const error = result.statusCode === null ? (result.error ?? 'no response') : `HTTP ${result.statusCode}: ${result.responseBody.slice(0, 200)}`;
      await markFailed(db, { streamId: target.id, statusCode: result.statusCode, error, nextAttemptAt: at });
      ctx.logger.warn({ auditStreamId: target.id, batchId, statusCode: result.statusCode, failures }, 'audit stream batch failed; retrying later');
      return { next: 'retry', at };
    }
    if (!(await markDelivered(db, { streamId: target.id, deliveredSeq, throughSeq, entries: entries.length }))) return { next: 'idle' };
    deliveredSeq = throughSeq;
    pendingThroughSeq = null;
    failures = 0;
  }
  return { next: 'more' };
}
