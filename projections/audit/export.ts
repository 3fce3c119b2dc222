// The audit trail as exported (GET /api/employer/audit-events/export, and whatever else sends entries
// out of the service): each entry with its seal in the audit chain (projections/audit-chain/), so an
// auditor checks it against the chain that scripts/verify-audit-chain.mjs verifies. Read oldest first
// (the chain's direction) in keyset pages by (occurred_at, global_position), one page ahead at most.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { csvLine, CSV_LINE_END, type CsvColumn } from '../../src/db/csv.ts';
import { prefetchedPages, type Keyset } from '../../src/http/page.ts';
import { auditConditions, auditEntry, auditEntryColumns, auditEntryOf, auditEntryRow, type AuditFilters } from './queries.ts';

export const AUDIT_EXPORT_PAGE_ROWS = 5000;

/** An entry's seal in the employer's audit chain (projections/audit-chain/). */
export const auditChainSeal = z.object({
  seq: z.number().int().meta({ description: "1-based position of the entry's event in the employer's chain." }),
  prevHash: z.string().meta({ description: 'Hex SHA-256 of the link before (64 zeros for seq 1).' }),
  hash: z.string().meta({ description: 'Hex SHA-256(prevHash || canonical JSON of the event): what the verifier recomputes.' }),
});

export const auditExportEntry = auditEntry
  .extend({
    chain: auditChainSeal
      .nullable()
      .meta({ description: 'The seal of the entry\'s event; null for the moment between its write and its sealing.' }),
  })
  .meta({ id: 'AuditExportEntry' });
export type AuditExportEntryView = z.infer<typeof auditExportEntry>;

export const auditExportRow = auditEntryRow.extend({
  chain_seq: z.bigint().nullable(),
  chain_prev_hash: z.string().nullable(),
  chain_hash: z.string().nullable(),
});
export type AuditExportRow = z.infer<typeof auditExportRow>;

export function auditExportEntryOf(row: AuditExportRow): AuditExportEntryView {
  return {
    ...auditEntryOf(row),
    chain: row.chain_seq !== null && row.chain_prev_hash !== null && row.chain_hash !== null
      ? { seq: Number(row.chain_seq), prevHash: row.chain_prev_hash, hash: row.chain_hash }
      : null,
  };
}

/** The CSV's columns, and the column of the export's rows behind each. */
const CSV_COLUMNS: ReadonlyArray<[string, CsvColumn]> = [
  ['id', { column: 'event_id', freeText: false }],
  ['occurredAt', { column: 'occurred_iso', freeText: false }],
  ['action', { column: 'action', freeText: true }],
  ['actorType', { column: 'actor_type', freeText: true }],
  ['actorId', { column: 'actor_id', freeText: true }],
  ['targetType', { column: 'target_type', freeText: true }],
  ['targetId', { column: 'target_id', freeText: true }],
  ['ipAddress', { column: 'ip_address', freeText: true }],
  ['userAgent', { column: 'user_agent', freeText: true }],
  ['requestId', { column: 'request_id', freeText: true }],
  ['details', { column: 'details_json', freeText: true }],
  ['chainSeq', { column: 'chain_seq', freeText: false }],
  ['chainPrevHash', { column: 'chain_prev_hash', freeText: false }],
  ['chainHash', { column: 'chain_hash', freeText: false }],
];
export const AUDIT_CSV_HEADER = `${CSV_COLUMNS.map(([name]) => name).join(',')}${CSV_LINE_END}`;
const auditCsvLine = csvLine(CSV_COLUMNS.map(([, column]) => column));

/** One page's rows under `filters` after `after` as a derived table: auditExportRow's columns, cursor_at, occurred_iso and details_json. */
function exportedRows(employerId: string, filters: AuditFilters, after: Keyset | null) {
  const conditions = auditConditions(employerId, filters);
  if (after) conditions.push(sql.fragment`(occurred_at, global_position) > (${after.at}::timestamptz, ${after.id}::bigint)`);
  return sql.fragment`(
    SELECT entry.*, entry.occurred_at::text AS cursor_at, entry.details::text AS details_json,
           to_char(entry.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_iso,
           seal.seq AS chain_seq, seal.prev_hash AS chain_prev_hash, seal.hash AS chain_hash
    FROM (SELECT ${auditEntryColumns} FROM audit_log WHERE ${sql.join(conditions, sql.fragment` AND `)}
          ORDER BY occurred_at, global_position LIMIT ${AUDIT_EXPORT_PAGE_ROWS}) AS entry
    -- A lookup by event id for each of the page's rows: as a plain join, Postgres hashed the whole
    -- audit_chain for every page (80 ms a page against 9 ms at 100,000 entries, bench audit-export).
    LEFT JOIN LATERAL (SELECT seq, prev_hash, hash FROM audit_chain WHERE audit_chain.event_id = entry.event_id LIMIT 1) AS seal ON true
  ) AS exported`;
}

/** A full page may have more after it; a short one is the last. */
const nextAfter = (rowCount: number, last: Keyset | null) => (rowCount === AUDIT_EXPORT_PAGE_ROWS ? last : null);

const exportRow = auditExportRow.extend({ cursor_at: z.string() });

/** The entries under `filters`, oldest first, a page at a time. */
export async function* auditExportEntryPages(pool: CommonQueryMethods, employerId: string, filters: AuditFilters): AsyncGenerator<AuditExportEntryView[]> {
  const pages = prefetchedPages(async (after) => {
    const rows = await pool.any(sql.type(exportRow)`
      SELECT ${auditEntryColumns}, chain_seq, chain_prev_hash, chain_hash, cursor_at
      FROM ${exportedRows(employerId, filters, after)} ORDER BY occurred_at, global_position`);
    const last = rows[rows.length - 1];
    return { rows, next: nextAfter(rows.length, last ? { at: last.cursor_at, id: last.global_position.toString() } : null) };
  });
  for await (const page of pages) yield page.rows.map(auditExportEntryOf);
}

// One row per page, its lines joined by Postgres: the service handles one string a page, not a row a line.
const csvPage = z.object({ lines: z.string().nullable(), line_count: z.number(), last_at: z.string().nullable(), last_position: z.bigint().nullable() });

/** The CSV lines of the entries under `filters`, oldest first, formatted by Postgres: a page at a time, as one text (without a final line end; null when empty). */
export async function* auditExportCsvPages(pool: CommonQueryMethods, employerId: string, filters: AuditFilters): AsyncGenerator<string | null> {
  const pages = prefetchedPages(async (after) => {
    const page = await pool.one(sql.type(csvPage)`
      SELECT string_agg(${auditCsvLine}, ${CSV_LINE_END} ORDER BY occurred_at, global_position) AS lines, count(*)::int AS line_count,
             (array_agg(cursor_at ORDER BY occurred_at DESC, global_position DESC))[1] AS last_at,
             (array_agg(global_position ORDER BY occurred_at DESC, global_position DESC))[1] AS last_position
      FROM ${exportedRows(employerId, filters, after)}`);
    const last = page.last_at !== null && page.last_position !== null ? { at: page.last_at, id: page.last_position.toString() } : null;
    return { lines: page.lines, next: nextAfter(page.line_count, last) };
  });
  for await (const page of pages) yield page.lines;
}
