// Worker tasks of exports: running a CSV or FHIR Bulk Data export chunk by chunk (each chunk commits
// with the position after it, so a run resumes where it stopped), re-running the exports of workers
// that died, and the hourly deletion of expired files.
import { sql, type DatabasePool } from 'slonik';
import type { JobHelpers, TaskList } from 'graphile-worker';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { handleCommand } from '../event-store/command-handler.ts';
import { recordOnceDecider } from '../event-store/record-once.ts';
import { tenantStream } from '../event-store/port.ts';
import { currentTraceContext } from '../tracing.ts';
import type { Keyset } from '../http/page.ts';
import { leaseAbandoned, unlockJobsOfDeadWorkers, type ProcessLease } from '../worker/lease.ts';
import { employerJobArguments } from '../worker/fair-share.ts';
import { assertExportAdmitted } from './admission.ts';
import { bulkStatusUrl, countBulkResources, writeBulkFiles, type BulkRequest } from './bulk-data.ts';
import { CSV_LINE_END } from '../db/csv.ts';
import { CSV_HEADER, rosterCsvLine } from './csv.ts';
import type { ExportCompleted } from './events.ts';
import { ROSTER_ORDER, rosterPageQuery } from '../../projections/patients/queries.ts';
import { countPatients } from './roster.ts';
import { exportMetrics, type ExportMetrics } from './metrics.ts';
import { deleteExpiredFiles, exportFileBytes, insertExport, lockExport, markCompleted, markFailed, startRun, writeChunkFromQuery, type ExportKind, type ExportRow } from './store.ts';

export const RUN_EXPORT_TASK = 'export_run';
export const RECOVER_EXPORTS_TASK = 'export_recover';
export const DELETE_EXPIRED_TASK = 'export_delete_expired';
export const CSV_FILE = 'roster.csv';

type ExportJob = { employerId: string; exportId: string };
type CsvPosition = { after: Keyset | null; seq: number };

export const csvDownloadUrl = (ctx: AppContext, exportId: string) => `${ctx.config.PUBLIC_BASE_URL}/api/employer/export/csv/exports/${exportId}/download`;

/**
 * Queues the run of an export in the caller's transaction (job key: one run per export), one of its
 * employer's jobs; with the caller's trace context, so the run joins the trace of the request.
 */
function queueExportJob(job: ExportJob) {
  return sql.unsafe`SELECT graphile_worker.add_job(${RUN_EXPORT_TASK}::text, ${sql.jsonb({ ...job, ...currentTraceContext() })}::json, job_key => ${`export:${job.exportId}`}::text, max_attempts => 5,
    ${employerJobArguments(job.employerId)})`;
}

/**
 * Starts an export of the employer, in one transaction: admitted within its limits (./admission.ts),
 * recorded as pending, and its run queued. Every kick-off route goes through here.
 */
export async function startExport(ctx: AppContext, input: { employerId: string; exportId: string; kind: ExportKind; request?: BulkRequest }): Promise<void> {
  await ctx.db.slonik.transaction(async (tx) => {
    await assertExportAdmitted(tx, ctx.config, input.employerId, input.kind);
    await insertExport(tx, input);
    await tx.query(queueExportJob({ employerId: input.employerId, exportId: input.exportId }));
  });
}

/** Rows of a CSV chunk: large chunks make few statements. */
const CSV_CHUNK_ROWS = 5_000;

/**
 * Writes the export's remaining chunks, each in a transaction with the position after it; stops early
 * (false) when the export was cancelled meanwhile. Postgres reads each page of the roster and formats
 * it (src/exports/csv.ts) into the chunk itself.
 */
async function writeCsvFile(ctx: AppContext, row: ExportRow): Promise<boolean> {
  const at = { employerId: row.employer_id, exportId: row.export_id };
  let position = (row.resume_after as CsvPosition | null) ?? { after: null, seq: 0 };
  for (;;) {
    const from = position;
    const lines = sql.fragment`
      SELECT row_number() OVER (ORDER BY ${ROSTER_ORDER}) AS ord, json_build_object('at', cursor_at, 'id', id)::text AS cursor, ${rosterCsvLine} AS line
      FROM (${rosterPageQuery(row.employer_id, { limit: CSV_CHUNK_ROWS, after: from.after })}) page`;
    const chunk = { fileName: CSV_FILE, seq: from.seq, lines, lineEnd: CSV_LINE_END, header: from.seq === 0 ? CSV_HEADER : undefined };
    const next = await ctx.db.slonik.transaction(async (tx) => {
      const current = await lockExport(tx, at.employerId, at.exportId);
      if (current?.status !== 'running') return null;
      return writeChunkFromQuery(tx, at, chunk, ({ lineCount, lastCursor }): CsvPosition =>
        ({ after: lineCount < CSV_CHUNK_ROWS ? null : (JSON.parse(lastCursor!) as Keyset), seq: from.seq + 1 }));
    });
    if (next === null) return false;
    if (next.after === null) return true; // a short chunk was the last
    position = next;
  }
}

async function runExport(ctx: AppContext, processLease: ProcessLease, job: ExportJob, helpers: JobHelpers, metrics: ExportMetrics): Promise<void> {
  const lease = (await processLease.held()).key();
  const started = await ctx.db.slonik.transaction(async (tx) => {
    const row = await lockExport(tx, job.employerId, job.exportId);
    if (!row || (row.status !== 'pending' && row.status !== 'running')) return row;
    const totalRows = () => (row.kind === 'csv' ? countPatients(tx, row.employer_id) : countBulkResources(tx, row, ctx.encryptionKey));
    return startRun(tx, row, { totalRows, lease, workerId: helpers.job.locked_by ?? 'unknown' });
  });
  if (!started || (started.status !== 'running' && started.status !== 'completed')) return;
  if (started.status === 'running') {
    const finished = started.kind === 'csv' ? await writeCsvFile(ctx, started) : await writeBulkFiles(ctx, started);
    if (!finished) return;
  }
  const done = started.status === 'completed' ? started : await markCompleted(ctx.db.slonik, job.employerId, job.exportId, ctx.config.EXPORT_RETENTION_DAYS);
  if (started.status === 'running') {
    const seconds = (Date.parse(done.completed_at!) - Date.parse(done.created_at)) / 1000;
    metrics.completed(done.kind, seconds, await exportFileBytes(ctx.db.slonik, job.employerId, job.exportId));
  }
  await announceCompleted(ctx, done, done.kind === 'csv' ? csvDownloadUrl(ctx, done.export_id) : bulkStatusUrl(ctx, done.export_id));
}

/**
 * Records ExportCompleted (the webhook `export.ready`) after the export is marked completed, so a
 * receiver that downloads at once finds the file. Once per export: a retried job finds it recorded.
 */
async function announceCompleted(ctx: AppContext, row: ExportRow, downloadUrl: string): Promise<void> {
  const completed: ExportCompleted = { type: 'ExportCompleted', data: { exportId: row.export_id, kind: row.kind, rowCount: row.row_count, downloadUrl } };
  await handleCommand(ctx.commands, {
    streamName: tenantStream(row.employer_id, 'export', row.export_id),
    decider: recordOnceDecider,
    command: { record: completed },
    context: { tenantId: row.employer_id, actor: { type: 'system', id: 'exports' }, correlationId: row.export_id },
  });
}

/**
 * Exports running under a lease no process holds any more (its worker died): their jobs are unlocked
 * with graphile-worker's force_unlock_workers, so they run again now rather than after graphile-worker's
 * 4 hours, and resume from their last chunk (src/worker/lease.ts).
 */
export async function recoverInterruptedExports(pool: DatabasePool): Promise<number> {
  return pool.transaction(async (tx) => {
    const workers = await tx.anyFirst(sql.type(z.object({ worker_id: z.string() }))`
      WITH orphaned AS (
        SELECT e.employer_id, e.export_id, e.worker_id FROM exports e
        WHERE e.status = 'running' AND e.worker_lease IS NOT NULL AND ${leaseAbandoned(sql.fragment`e.worker_lease`)}
        FOR UPDATE OF e SKIP LOCKED
      )
      UPDATE exports e SET worker_lease = NULL, worker_id = NULL FROM orphaned o
      WHERE e.employer_id = o.employer_id AND e.export_id = o.export_id RETURNING o.worker_id`);
    if (workers.length === 0) return 0;
    await unlockJobsOfDeadWorkers(tx, workers);
    return workers.length;
  });
}

export function exportTasks(ctx: AppContext, lease: ProcessLease): TaskList {
  const metrics = exportMetrics(ctx.metrics);
  return {
    [RUN_EXPORT_TASK]: async (payload, helpers) => {
      const job = payload as ExportJob;
      try {
        await runExport(ctx, lease, job, helpers, metrics);
      } catch (error) {
        // The last attempt marks the export failed, so its status does not stay `running` for ever.
        if (helpers.job.attempts >= helpers.job.max_attempts) await markFailed(ctx.db.slonik, job.employerId, job.exportId, 'The export could not be written.');
        throw error;
      }
    },
    [RECOVER_EXPORTS_TASK]: async () => {
      const recovered = await recoverInterruptedExports(ctx.db.slonik);
      if (recovered > 0) ctx.logger.warn({ recovered }, 're-running exports whose worker died');
    },
    [DELETE_EXPIRED_TASK]: async () => {
      const deleted = await deleteExpiredFiles(ctx.db.slonik);
      if (deleted > 0) ctx.logger.info({ deleted }, 'deleted the files of expired exports');
    },
  };
}
