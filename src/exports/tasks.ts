// Worker tasks of exports: running a CSV export page by page (resumable: each chunk commits with the
// position it was read up to), and the hourly deletion of expired files.
import { sql } from 'slonik';
import type { TaskList } from 'graphile-worker';
import type { AppContext } from '../app-context.ts';
import { tenantStream, WrongExpectedRevisionError } from '../event-store/port.ts';
import type { Keyset } from '../http/page.ts';
import { csvLines } from './csv.ts';
import { countPatients, rosterPages } from './roster.ts';
import { deleteExpiredFiles, lockExport, markCompleted, markFailed, writeChunk, type ExportRow } from './store.ts';

export const CSV_EXPORT_TASK = 'export_csv';
export const DELETE_EXPIRED_TASK = 'export_delete_expired';
export const CSV_FILE = 'roster.csv';

type ExportJob = { employerId: string; exportId: string };
type CsvPosition = { after: Keyset | null; seq: number };

export const csvDownloadUrl = (ctx: AppContext, exportId: string) => `${ctx.config.PUBLIC_BASE_URL}/api/employer/export/csv/exports/${exportId}/download`;

/** Queues the run of an export in the caller's transaction (job key: one run per export). */
export function queueExportJob(task: string, job: ExportJob) {
  return sql.unsafe`SELECT graphile_worker.add_job(${task}::text, ${sql.jsonb(job)}::json, job_key => ${`export:${job.exportId}`}::text, max_attempts => 5)`;
}

async function runCsvExport(ctx: AppContext, job: ExportJob): Promise<void> {
  const { employerId, exportId } = job;
  const start = await ctx.db.slonik.transaction(async (tx) => {
    const row = await lockExport(tx, employerId, exportId);
    if (!row || (row.status !== 'pending' && row.status !== 'running')) return row;
    if (row.total_rows === null) {
      await tx.query(sql.unsafe`UPDATE exports SET status = 'running', total_rows = ${await countPatients(tx, employerId)} WHERE employer_id = ${employerId} AND export_id = ${exportId}`);
    }
    return row;
  });
  if (!start || start.status === 'failed' || start.status === 'expired' || start.status === 'cancelled') return;
  if (start.status !== 'completed') {
    const position = (start.resume_after as CsvPosition | null) ?? { after: null, seq: 0 };
    let seq = position.seq;
    for await (const page of rosterPages(ctx.db.slonik, employerId, position.after)) {
      if (page.patients.length === 0 && seq > 0) break;
      const content = csvLines(page.patients, seq === 0);
      const next: CsvPosition = { after: page.next, seq: seq + 1 };
      await ctx.db.slonik.transaction((tx) => writeChunk(tx, job, { fileName: CSV_FILE, seq, lineCount: page.patients.length, content }, next));
      seq += 1;
    }
  }
  const done = start.status === 'completed' ? start : await markCompleted(ctx.db.slonik, employerId, exportId, ctx.config.EXPORT_RETENTION_DAYS);
  await announceCompleted(ctx, done, csvDownloadUrl(ctx, exportId));
}

/**
 * Appends ExportCompleted (the webhook `export.ready`) after the export is marked completed, so a
 * receiver that downloads at once finds the file. Once per export: a retried job finds the stream there.
 */
export async function announceCompleted(ctx: AppContext, row: ExportRow, downloadUrl: string): Promise<void> {
  try {
    await ctx.eventStore.appendToStream(
      tenantStream(row.employer_id, 'export', row.export_id),
      [{ type: 'ExportCompleted', data: { exportId: row.export_id, kind: row.kind, rowCount: row.row_count, downloadUrl } }],
      {
        expectedRevision: 'no_stream',
        metadata: { tenantId: row.employer_id, actor: { type: 'system', id: 'exports' }, correlationId: row.export_id, causationId: null, schemaVersion: 1, occurredAt: new Date().toISOString() },
      },
    );
  } catch (error) {
    if (!(error instanceof WrongExpectedRevisionError)) throw error;
  }
}

export function exportTasks(ctx: AppContext): TaskList {
  return {
    [CSV_EXPORT_TASK]: async (payload, helpers) => {
      const job = payload as ExportJob;
      try {
        await runCsvExport(ctx, job);
      } catch (error) {
        // The last attempt marks the export failed, so its status does not stay `running` for ever.
        if (helpers.job.attempts >= helpers.job.max_attempts) await markFailed(ctx.db.slonik, job.employerId, job.exportId, 'The export could not be written.');
        throw error;
      }
    },
    [DELETE_EXPIRED_TASK]: async () => {
      const deleted = await deleteExpiredFiles(ctx.db.slonik);
      if (deleted > 0) ctx.logger.info({ deleted }, 'deleted the files of expired exports');
    },
  };
}
