// FHIR Bulk Data export (HL7 Bulk Data Access IG 2.0): the run of one export. Each resource type is
// read in keyset pages by id, in the snapshot of the export's transactionTime (resources last updated
// after it are left to the next `_since` export), and written as NDJSON chunks; a chunk commits with
// the position after it, so a run killed mid-export resumes where the last chunk ended. A group-level
// export (`Group/{cohortId}/$export`) reads only the resources of the cohort's patients; `patients`
// narrows a Patient- or Group-level export to those, `typeFilters` a type to the resources its searches
// match (the search SQL of projections/fhir-resources/search.ts, OR between a type's filters), and
// `elements` cuts a type's resources down in SQL to the keys the kick-off computed (SUBSETTED). What
// a lenient kick-off ignored is written as OperationOutcomes, the manifest's `error` file.
import type { KeyObject } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import type { FhirResourceType } from '../patients/events.ts';
import { FHIR_PATH, type StatementPart } from '../patients/fhir/interaction.ts';
import { SUBSETTED_TAG } from '../patients/fhir/subset.ts';
import { parseSearch } from '../../projections/fhir-resources/search.ts';
import { EXPORT_PAGE_ROWS } from './roster.ts';
import { lockExport, writeChunkFromQuery, type ExportRow } from './store.ts';

/** A file holds at most this many resources (100 chunks); past it, the type's next file starts. */
export const BULK_FILE_MAX_LINES = 100 * EXPORT_PAGE_ROWS;

/**
 * `group`: the cohort of a group-level export (absent for system and patient level). The fields after
 * `group` are absent from exports kicked off before they existed.
 */
export type BulkRequest = {
  url: string;
  types: string[];
  since: string | null;
  group?: string;
  /** Patient ids (`patient`): only their resources. */
  patients?: string[];
  /** `_typeFilter`: a type's query strings; a resource of the type is exported when one matches. */
  typeFilters?: { type: FhirResourceType; search: string }[];
  /** `_elements`: the JSON keys kept of each type's resources (src/patients/fhir/subset.ts keptKeys); types absent are whole. */
  elements?: Record<string, string[]>;
  /** What a lenient kick-off could not honour and ignored. */
  ignored?: string[];
};

/** The file of OperationOutcomes telling what a lenient kick-off ignored (the manifest's `error`). */
const IGNORED_FILE = 'OperationOutcome-1.ndjson';
type BulkPosition = { typeIndex: number; after: string | null; seq: number };

const BULK_DATA_DEFINITIONS = 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition';

/** What the Bulk Data kick-offs (routes/bulk-data.ts) add to the FHIR CapabilityStatement: $export at the system, Patient and Group levels. */
export const bulkDataStatement: StatementPart = {
  resource: (resourceType) => (resourceType === 'Patient' ? { operation: [{ name: 'export', definition: `${BULK_DATA_DEFINITIONS}/patient-export` }] } : {}),
  rest: {
    operation: [{ name: 'export', definition: `${BULK_DATA_DEFINITIONS}/export` }],
    resource: [{ type: 'Group', operation: [{ name: 'export', definition: `${BULK_DATA_DEFINITIONS}/group-export` }] }],
  },
};

export const bulkStatusUrl = (ctx: AppContext, exportId: string) => `${ctx.config.PUBLIC_BASE_URL}${FHIR_PATH}/bulk-export/${exportId}`;
export const bulkFileName = (type: string, seq: number) => `${type}-${Math.floor((seq * EXPORT_PAGE_ROWS) / BULK_FILE_MAX_LINES) + 1}.ndjson`;

/** Which resources of fhir_resources `r` the export takes, of the types requested. */
function snapshotCondition(row: ExportRow, request: BulkRequest, encryptionKey: KeyObject) {
  return sql.fragment`r.employer_id = ${row.employer_id} AND NOT r.erased AND NOT r.deleted AND r.last_updated <= ${row.transaction_time!}::timestamptz
    ${request.since ? sql.fragment`AND r.last_updated > ${request.since}::timestamptz` : sql.fragment``}
    ${request.group ? sql.fragment`AND r.patient_id IN (SELECT patient_id FROM cohort_members WHERE employer_id = ${row.employer_id} AND cohort_id = ${request.group})` : sql.fragment``}
    ${request.patients ? sql.fragment`AND r.patient_id = ANY(${sql.array(request.patients, 'text')})` : sql.fragment``}
    AND ${typeCondition(row, request, encryptionKey)}`;
}

/** Each requested type, with its _typeFilter searches when it has some. */
function typeCondition(row: ExportRow, request: BulkRequest, encryptionKey: KeyObject) {
  const ofType = request.types.map((type) => {
    const searches = (request.typeFilters ?? []).filter((filter) => filter.type === type).map((filter) => {
      const { conditions } = parseSearch(filter.type, Object.fromEntries(new URLSearchParams(filter.search).entries()), { employerId: row.employer_id, encryptionKey });
      return sql.fragment`(${sql.join(conditions, sql.fragment` AND `)})`;
    });
    return searches.length === 0
      ? sql.fragment`r.resource_type = ${type}`
      : sql.fragment`(r.resource_type = ${type} AND (${sql.join(searches, sql.fragment` OR `)}))`;
  });
  return sql.fragment`(${sql.join(ofType, sql.fragment` OR `)})`;
}

/** A resource as its line of the type's file: whole, or cut down to the kept keys and tagged SUBSETTED. */
function lineOf(request: BulkRequest, type: string) {
  const kept = request.elements?.[type];
  if (!kept) return sql.fragment`r.resource::text`;
  return sql.fragment`((SELECT jsonb_object_agg(key, value) FROM jsonb_each(r.resource) WHERE key = ANY(${sql.array(kept, 'text')}))
    || jsonb_build_object('meta', coalesce(r.resource->'meta', '{}'::jsonb) || jsonb_build_object('tag', coalesce(r.resource->'meta'->'tag', '[]'::jsonb) || ${sql.jsonb([SUBSETTED_TAG])})))::text`;
}

export async function countBulkResources(pool: CommonQueryMethods, row: ExportRow, encryptionKey: KeyObject): Promise<number> {
  const request = row.request as BulkRequest;
  return pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM fhir_resources r WHERE ${snapshotCondition(row, request, encryptionKey)}`);
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
  if (position.typeIndex === 0 && position.seq === 0 && request.ignored?.length) await writeIgnoredFile(ctx, row, request.ignored);
  while (position.typeIndex < request.types.length) {
    const type = request.types[position.typeIndex]!;
    const from = position;
    const lines = sql.fragment`
      SELECT r.id AS ord, r.id AS cursor, ${lineOf(request, type)} AS line FROM fhir_resources r
      WHERE ${snapshotCondition(row, request, ctx.encryptionKey)} AND r.resource_type = ${type} ${from.after === null ? sql.fragment`` : sql.fragment`AND r.id > ${from.after}`}
      ORDER BY r.id LIMIT ${EXPORT_PAGE_ROWS}`;
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

/**
 * One OperationOutcome (a warning) per parameter a lenient kick-off ignored, written once before the
 * first chunk (a run resumed before any chunk finds it written). Not counted as exported rows.
 */
async function writeIgnoredFile(ctx: AppContext, row: ExportRow, ignored: string[]) {
  const lines = ignored.map((message) => JSON.stringify({ resourceType: 'OperationOutcome', issue: [{ severity: 'warning', code: 'not-supported', diagnostics: `Ignored (Prefer: handling=lenient): ${message}` }] }));
  await ctx.db.slonik.query(sql.unsafe`
    INSERT INTO export_chunks (employer_id, export_id, file_name, seq, line_count, content)
    VALUES (${row.employer_id}, ${row.export_id}, ${IGNORED_FILE}, 0, ${lines.length}, ${`${lines.join('\n')}\n`})
    ON CONFLICT DO NOTHING`);
}

const fileRow = z.object({ file_name: z.string(), count: z.number() });

/** The manifest's `output` (one entry per file, types in the order requested, parts in order) and `error` (the ignored parameters' file). */
export async function bulkOutput(ctx: AppContext, row: ExportRow) {
  const files = await ctx.db.slonik.any(sql.type(fileRow)`
    SELECT file_name, sum(line_count)::int AS count FROM export_chunks WHERE employer_id = ${row.employer_id} AND export_id = ${row.export_id}
    GROUP BY file_name ORDER BY min(seq), file_name`);
  const types = (row.request as BulkRequest).types;
  const typeOf = (fileName: string) => fileName.slice(0, fileName.lastIndexOf('-'));
  const entry = (file: z.infer<typeof fileRow>) => ({ type: typeOf(file.file_name), url: `${bulkStatusUrl(ctx, row.export_id)}/files/${file.file_name}`, count: file.count });
  return {
    output: files
      .filter((file) => file.file_name !== IGNORED_FILE)
      .sort((a, b) => types.indexOf(typeOf(a.file_name)) - types.indexOf(typeOf(b.file_name)) || partOf(a.file_name) - partOf(b.file_name))
      .map(entry),
    error: files.filter((file) => file.file_name === IGNORED_FILE).map(entry),
  };
}
const partOf = (fileName: string) => Number(fileName.slice(fileName.lastIndexOf('-') + 1, -'.ndjson'.length));
