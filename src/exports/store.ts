// The `exports` and `export_chunks` tables (migrations/0026_exports.sql): an export's state and its
// files, every read and write scoped by employer. A file is the ordered chunks of one `file_name`.
import { Readable } from 'node:stream';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';

export const EXPORT_STATUSES = ['pending', 'running', 'completed', 'failed', 'expired', 'cancelled'] as const;
export type ExportKind = 'csv' | 'fhir';

const exportRow = z.object({
  employer_id: z.string(),
  export_id: z.string(),
  kind: z.enum(['csv', 'fhir']),
  status: z.enum(EXPORT_STATUSES),
  progress: z.number(),
  row_count: z.number(),
  total_rows: z.number().nullable(),
  resume_after: z.unknown(),
  failure: z.string().nullable(),
  request: z.unknown(),
  transaction_time: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  expires_at: z.string().nullable(),
});
export type ExportRow = z.infer<typeof exportRow>;

const isoColumns = sql.fragment`employer_id, export_id, kind, status, progress, row_count, total_rows, resume_after, failure, request,
  to_char(transaction_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS transaction_time,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS completed_at,
  to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at`;

/** A new export; FHIR Bulk Data ones carry their request, and their transactionTime is now. */
export async function insertExport(tx: CommonQueryMethods, input: { employerId: string; exportId: string; kind: ExportKind; request?: unknown }): Promise<ExportRow> {
  return tx.one(sql.type(exportRow)`
    INSERT INTO exports (employer_id, export_id, kind, status, request, transaction_time)
    VALUES (${input.employerId}, ${input.exportId}, ${input.kind}, 'pending', ${input.request === undefined ? null : sql.jsonb(input.request as never)}, ${input.kind === 'fhir' ? sql.fragment`now()` : null})
    RETURNING ${isoColumns}`);
}

/** Starts (or resumes) a run: `running`, the total counted once, and the lease and worker of this run recorded. */
export async function startRun(
  tx: DatabaseTransactionConnection,
  row: ExportRow,
  run: { totalRows: () => Promise<number>; lease: number; workerId: string },
): Promise<ExportRow> {
  const total = row.total_rows ?? (await run.totalRows());
  return tx.one(sql.type(exportRow)`
    UPDATE exports SET status = 'running', total_rows = ${total}, worker_lease = ${run.lease}, worker_id = ${run.workerId}
    WHERE employer_id = ${row.employer_id} AND export_id = ${row.export_id} RETURNING ${isoColumns}`);
}

/** Cancels a FHIR Bulk Data export and deletes its files; false when there is none to cancel. */
export async function cancelExport(pool: CommonQueryMethods, employerId: string, exportId: string): Promise<boolean> {
  const cancelled = await pool.maybeOne(sql.unsafe`
    UPDATE exports SET status = 'cancelled' WHERE employer_id = ${employerId} AND export_id = ${exportId} AND kind = 'fhir' AND status <> 'cancelled' RETURNING export_id`);
  if (cancelled) await pool.query(sql.unsafe`DELETE FROM export_chunks WHERE employer_id = ${employerId} AND export_id = ${exportId}`);
  return cancelled !== null;
}

/** The export as its employer sees it: files past their expiry show as `expired` even before the cleanup job runs. */
export async function getExport(pool: CommonQueryMethods, employerId: string, exportId: string, kind: ExportKind): Promise<ExportRow | null> {
  const row = await pool.maybeOne(sql.type(exportRow)`
    SELECT ${isoColumns} FROM exports WHERE employer_id = ${employerId} AND export_id = ${exportId} AND kind = ${kind}`);
  if (row && row.status === 'completed' && row.expires_at && Date.parse(row.expires_at) <= Date.now()) return { ...row, status: 'expired' };
  return row;
}

/** Locks the export for the worker that runs it (FOR UPDATE: one worker at a time). */
export async function lockExport(tx: DatabaseTransactionConnection, employerId: string, exportId: string): Promise<ExportRow | null> {
  return tx.maybeOne(sql.type(exportRow)`SELECT ${isoColumns} FROM exports WHERE employer_id = ${employerId} AND export_id = ${exportId} FOR UPDATE`);
}

/** The export's counters after a chunk of `lineCount` lines, and the position it was read up to. */
const chunkWritten = (lineCount: number, resumeAfter: unknown) => sql.fragment`
  status = 'running', row_count = row_count + ${lineCount}, resume_after = ${sql.jsonb(resumeAfter as never)},
  progress = CASE WHEN total_rows > 0 THEN LEAST(99, ((row_count + ${lineCount}) * 100) / total_rows) ELSE 0 END`;

/**
 * A chunk whose lines Postgres reads and joins itself, so they never pass through this process, and the
 * position after it, in the caller's transaction. `lines` is a query of `ord` (the file's order),
 * `line` and `cursor` (where a page after that line starts); `positionAfter` makes the position from
 * the chunk's line count and its last line's cursor. A chunk starts with `header` when given (written
 * even without lines); otherwise no chunk is written when there are no lines. Answers the position.
 */
export async function writeChunkFromQuery<Position>(
  tx: DatabaseTransactionConnection,
  at: { employerId: string; exportId: string },
  chunk: { fileName: string; seq: number; lines: ReturnType<typeof sql.fragment>; lineEnd: string; header?: string | undefined },
  positionAfter: (written: { lineCount: number; lastCursor: string | null }) => Position,
): Promise<Position> {
  const written = await tx.one(sql.type(z.object({ line_count: z.number(), last_cursor: z.string().nullable() }))`
    WITH page AS (${chunk.lines}),
    chunk AS (
      INSERT INTO export_chunks (employer_id, export_id, file_name, seq, line_count, content)
      SELECT ${at.employerId}, ${at.exportId}, ${chunk.fileName}, ${chunk.seq}, count(*),
        ${chunk.header ?? ''} || coalesce(string_agg(line, ${chunk.lineEnd} ORDER BY ord) || ${chunk.lineEnd}, '')
      FROM page HAVING count(*) > 0 OR ${chunk.header !== undefined})
    SELECT count(*)::int AS line_count, (array_agg(cursor ORDER BY ord DESC))[1] AS last_cursor FROM page`);
  const position = positionAfter({ lineCount: written.line_count, lastCursor: written.last_cursor });
  await tx.query(sql.unsafe`
    UPDATE exports SET ${chunkWritten(written.line_count, position)}
    WHERE employer_id = ${at.employerId} AND export_id = ${at.exportId}`);
  return position;
}

export async function markCompleted(tx: CommonQueryMethods, employerId: string, exportId: string, retentionDays: number): Promise<ExportRow> {
  return tx.one(sql.type(exportRow)`
    UPDATE exports SET status = 'completed', progress = 100, completed_at = now(), worker_lease = NULL, worker_id = NULL, expires_at = now() + make_interval(secs => ${retentionDays * 86_400})
    WHERE employer_id = ${employerId} AND export_id = ${exportId} RETURNING ${isoColumns}`);
}

/** A failed export keeps no partial files: nothing could download them, and they would count against the quota. */
export async function markFailed(pool: CommonQueryMethods, employerId: string, exportId: string, failure: string): Promise<void> {
  await pool.query(sql.unsafe`
    WITH failed AS (
      UPDATE exports SET status = 'failed', failure = ${failure} WHERE employer_id = ${employerId} AND export_id = ${exportId} AND status IN ('pending', 'running')
      RETURNING employer_id, export_id)
    DELETE FROM export_chunks c USING failed f WHERE c.employer_id = f.employer_id AND c.export_id = f.export_id`);
}

/** Exports of the kind the employer has pending or running. */
export async function exportsInFlight(pool: CommonQueryMethods, employerId: string, kind: ExportKind): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM exports WHERE employer_id = ${employerId} AND kind = ${kind} AND status IN ('pending', 'running')`);
}

/**
 * The bytes of the employer's stored export files that count against its quota (those of exports
 * pending, running, or completed and not yet expired: files past their expiry count no more, before
 * the hourly job deletes them), and when the next completed export expires and frees its bytes.
 */
export async function storedExportFiles(pool: CommonQueryMethods, employerId: string): Promise<{ bytes: number; nextExpiry: string | null }> {
  return pool.one(sql.type(z.object({ bytes: z.number(), nextExpiry: z.string().nullable() }))`
    SELECT
      (SELECT coalesce(sum(octet_length(c.content)), 0)::float8 FROM export_chunks c JOIN exports e USING (employer_id, export_id)
       WHERE c.employer_id = ${employerId} AND (e.status IN ('pending', 'running') OR (e.status = 'completed' AND e.expires_at > now()))) AS bytes,
      (SELECT to_char(min(expires_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') FROM exports
       WHERE employer_id = ${employerId} AND status = 'completed' AND expires_at > now()) AS "nextExpiry"`);
}

/** Deletes the files of expired exports (chunks cascade with the row's files removed, the row kept as `expired`). */
export async function deleteExpiredFiles(pool: CommonQueryMethods): Promise<number> {
  const expired = await pool.any(sql.type(z.object({ employer_id: z.string(), export_id: z.string() }))`
    UPDATE exports SET status = 'expired' WHERE status = 'completed' AND expires_at <= now() RETURNING employer_id, export_id`);
  for (const row of expired) {
    await pool.query(sql.unsafe`DELETE FROM export_chunks WHERE employer_id = ${row.employer_id} AND export_id = ${row.export_id}`);
  }
  return expired.length;
}

const chunkRow = z.object({ seq: z.number(), content: z.string() });
/** Chunks read a query: few round trips, and two chunks (a CSV chunk is about 0.5 MB) in memory. */
const FILE_READ_CHUNKS = 2;

/** A file's text, a few chunks at a time (keyset on seq): memory holds those, whatever the file's size. */
export function fileStream(pool: CommonQueryMethods, at: { employerId: string; exportId: string }, fileName: string): Readable {
  async function* chunks() {
    let after = -1;
    for (;;) {
      const rows = await pool.any(sql.type(chunkRow)`
        SELECT seq, content FROM export_chunks
        WHERE employer_id = ${at.employerId} AND export_id = ${at.exportId} AND file_name = ${fileName} AND seq > ${after}
        ORDER BY seq LIMIT ${FILE_READ_CHUNKS}`);
      for (const row of rows) yield row.content;
      if (rows.length < FILE_READ_CHUNKS) return;
      after = rows.at(-1)!.seq;
    }
  }
  return Readable.from(chunks());
}

/** The bytes of an export's files. */
export async function exportFileBytes(pool: CommonQueryMethods, employerId: string, exportId: string): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ bytes: z.number() }))`
    SELECT coalesce(sum(octet_length(content)), 0)::float8 AS bytes FROM export_chunks WHERE employer_id = ${employerId} AND export_id = ${exportId}`);
}
