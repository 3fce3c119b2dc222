// The audit trail as exported (GET /api/employer/audit-events/export, and whatever else sends entries
// out of the service): each entry with its seal in the audit chain (projections/audit-chain/), so an
// auditor checks it against the chain that scripts/verify-audit-chain.mjs verifies. Read oldest first
// (the chain's direction) in keyset pages by (occurred_at, global_position), one page ahead at most.
import { sql, type CommonQueryMethods, type ValueExpression } from 'slonik';
import { z } from 'zod';
import { csvLine, CSV_LINE_END, type CsvColumn } from '../../src/db/csv.ts';
import { pageOf, prefetchedPages, type Keyset } from '../../src/http/page.ts';
import { auditConditions, auditEntry, auditEntryColumns, auditEntryOf, auditEntryRow, type AuditFilters } from './queries.ts';

export const AUDIT_EXPORT_PAGE_ROWS = 1000;

export const auditExportEntry = auditEntry
  .extend({
    chain: z
      .object({
        seq: z.number().int().meta({ description: "1-based position of the entry's event in the employer's chain." }),
        prevHash: z.string().meta({ description: 'Hex SHA-256 of the link before (64 zeros for seq 1).' }),
        hash: z.string().meta({ description: 'Hex SHA-256(prevHash || canonical JSON of the event): what the verifier recomputes.' }),
      })
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

const cursorOf = (row: { cursor_at: string; global_position: bigint }): Keyset => ({ at: row.cursor_at, id: row.global_position.toString() });

/** Pages of the entries under `filters` as rows of `select` over the export's columns (those of auditExportRow, cursor_at, occurred_iso, details_json). */
function exportPages<Row extends { cursor_at: string; global_position: bigint }>(
  pool: CommonQueryMethods,
  employerId: string,
  filters: AuditFilters,
  rowType: z.ZodType<Row>,
  select: ValueExpression,
) {
  return prefetchedPages(async (after) => {
    const conditions = auditConditions(employerId, filters);
    if (after) conditions.push(sql.fragment`(occurred_at, global_position) > (${after.at}::timestamptz, ${after.id}::bigint)`);
    const rows = await pool.any(sql.type(rowType)`
      SELECT ${select} FROM (
        SELECT entry.*, entry.occurred_at::text AS cursor_at, entry.details::text AS details_json,
               to_char(entry.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_iso,
               seal.seq AS chain_seq, seal.prev_hash AS chain_prev_hash, seal.hash AS chain_hash
        FROM (SELECT ${auditEntryColumns} FROM audit_log WHERE ${sql.join(conditions, sql.fragment` AND `)}
              ORDER BY occurred_at, global_position LIMIT ${AUDIT_EXPORT_PAGE_ROWS + 1}) AS entry
        LEFT JOIN audit_chain AS seal ON seal.event_id = entry.event_id
      ) AS exported
      ORDER BY occurred_at, global_position`);
    const { page, next } = pageOf(rows, AUDIT_EXPORT_PAGE_ROWS, cursorOf);
    return { rows: page, next };
  });
}

const csvRow = z.object({ line: z.string(), cursor_at: z.string(), global_position: z.bigint() });
const exportRow = auditExportRow.extend({ cursor_at: z.string() });

/** The entries under `filters`, oldest first, a page at a time. */
export async function* auditExportEntryPages(pool: CommonQueryMethods, employerId: string, filters: AuditFilters): AsyncGenerator<AuditExportEntryView[]> {
  const select = sql.fragment`${auditEntryColumns}, chain_seq, chain_prev_hash, chain_hash, cursor_at`;
  for await (const page of exportPages(pool, employerId, filters, exportRow, select)) yield page.rows.map(auditExportEntryOf);
}

/** The CSV lines (without line ends) of the entries under `filters`, oldest first, a page at a time, formatted by Postgres. */
export async function* auditExportCsvPages(pool: CommonQueryMethods, employerId: string, filters: AuditFilters): AsyncGenerator<string[]> {
  const select = sql.fragment`${auditCsvLine} AS line, cursor_at, global_position`;
  for await (const page of exportPages(pool, employerId, filters, csvRow, select)) yield page.rows.map((row) => row.line);
}
