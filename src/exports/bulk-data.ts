// FHIR Bulk Data export (HL7 Bulk Data Access IG 2.0): the run of one export. Each resource type is
// read in keyset pages by id, in the snapshot of the export's transactionTime (resources last updated
// after it are left to the next `_since` export), and written as NDJSON chunks; a chunk commits with
// the position after it, so a run killed mid-export resumes where the last chunk ended. A group-level
// export (`Group/{cohortId}/$export`) reads only the resources of the cohort's patients.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { FHIR_PATH } from '../patients/fhir/interaction.ts';
import { EXPORT_PAGE_ROWS } from './roster.ts';
import { lockExport, writeChunkFromQuery, type ExportRow } from './store.ts';

/** A file holds at most this many resources (100 chunks); past it, the type's next file starts. */
export const BULK_FILE_MAX_LINES = 100 * EXPORT_PAGE_ROWS;

/** `group`: the cohort of a group-level export (absent for system and patient level). */
export type BulkRequest = { url: string; types: string[]; since: string | null; group?: string };
type BulkPosition = { typeIndex: number; after: string | null; seq: number };

export const bulkStatusUrl = (ctx: AppContext, exportId: string) => `${ctx.config.PUBLIC_BASE_URL}${FHIR_PATH}/bulk-export/${exportId}`;
export const bulkFileName = (type: string, seq: number) => `${type}-${Math.floor((seq * EXPORT_PAGE_ROWS) / BULK_FILE_MAX_LINES) + 1}.ndjson`;

function snapshotCondition(row: ExportRow, request: BulkRequest) {
  return sql.fragment`employer_id = ${row.employer_id} AND NOT erased AND NOT deleted AND last_updated <= ${row.transaction_time!}::timestamptz
    ${request.since ? sql.fragment`AND last_updated > ${request.since}::timestamptz` : sql.fragment``}
    ${request.group ? sql.fragment`AND patient_id IN (SELECT patient_id FROM cohort_members WHERE employer_id = ${row.employer_id} AND cohort_id = ${request.group})` : sql.fragment``}`;
}

export async function countBulkResources(pool: CommonQueryMethods, row: ExportRow): Promise<number> {
  const request = row.request as BulkRequest;
  return pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM fhir_resources WHERE ${snapshotCondition(row, request)} AND resource_type = ANY(${sql.array(request.types, 'text')})`);
}

/**
 * Writes the export's remaining chunks; stops early (false) when the export was cancelled meanwhile.
 * Postgres reads each page and joins its resources into the chunk itself: the resources never pass
 * through this process, so its memory and CPU stay flat whatever the export's size.
 */
export async function writeBulkFiles(ctx: AppContext, row: ExportRow): Promise<boolean> {
  const request = row.request as BulkRequest;
  const at = { employerId: row.employer_id, exportId: row.export_id };
  let position = (row.resume_after as BulkPosition | null) ?? { typeIndex: 0, after: null, seq: 0 };
  while (position.typeIndex < request.types.length) {
    const type = request.types[position.typeIndex]!;
    const from = position;
    const lines = sql.fragment`
      SELECT id AS ord, id AS cursor, resource::text AS line FROM fhir_resources
      WHERE ${snapshotCondition(row, request)} AND resource_type = ${type} ${from.after === null ? sql.fragment`` : sql.fragment`AND id > ${from.after}`}
      ORDER BY id LIMIT ${EXPORT_PAGE_ROWS}`;
    const next = await ctx.db.slonik.transaction(async (tx) => {
      const current = await lockExport(tx, at.employerId, at.exportId);
      if (current?.status !== 'running') return null;
      return writeChunkFromQuery(tx, at, { fileName: bulkFileName(type, from.seq), seq: from.seq, lines, lineEnd: '\n' }, ({ lineCount, lastCursor }): BulkPosition =>
        lineCount < EXPORT_PAGE_ROWS ? { typeIndex: from.typeIndex + 1, after: null, seq: 0 } : { ...from, after: lastCursor, seq: from.seq + 1 });
    });
    if (next === null) return false;
    position = next;
  }
  return true;
}

const fileRow = z.object({ file_name: z.string(), count: z.number() });

/** The manifest's `output`: one entry per file, types in the order requested, parts in order. */
export async function bulkOutput(ctx: AppContext, row: ExportRow) {
  const files = await ctx.db.slonik.any(sql.type(fileRow)`
    SELECT file_name, sum(line_count)::int AS count FROM export_chunks WHERE employer_id = ${row.employer_id} AND export_id = ${row.export_id}
    GROUP BY file_name ORDER BY min(seq), file_name`);
  const types = (row.request as BulkRequest).types;
  const typeOf = (fileName: string) => fileName.slice(0, fileName.lastIndexOf('-'));
  return [...files]
    .sort((a, b) => types.indexOf(typeOf(a.file_name)) - types.indexOf(typeOf(b.file_name)) || partOf(a.file_name) - partOf(b.file_name))
    .map((file) => ({ type: typeOf(file.file_name), url: `${bulkStatusUrl(ctx, row.export_id)}/files/${file.file_name}`, count: file.count }));
}
const partOf = (fileName: string) => Number(fileName.slice(fileName.lastIndexOf('-') + 1, -'.ndjson'.length));
