// The audit entries a stream sends: each audit_log entry with its seal in the audit chain (seq, hash,
// prev hash), in chain order (the employer's commit order, never rebuilt), so a destination can both
// order them and check them against `events replay` and the signed checkpoints. streamedEntry is the
// one place the sent shape is made.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { auditChainSeal, auditExportEntry, auditExportEntryOf, auditExportRow } from '../audit/export.ts';
import { auditEntryColumns } from '../audit/queries.ts';

/** The exported entry (projections/audit/export.ts), always sealed here, with its employer. */
export const streamedAuditEntry = auditExportEntry
  .extend({
    employerId: z.string(),
    chain: auditChainSeal.meta({ description: "The entry's seal; `seq` is the stream's order." }),
  })
  .meta({ id: 'StreamedAuditEntry' });
export type StreamedAuditEntry = z.infer<typeof streamedAuditEntry>;

const entryRow = auditExportRow.extend({ employer_id: z.string(), chain_seq: z.bigint(), chain_prev_hash: z.string(), chain_hash: z.string() });
type EntryRow = z.infer<typeof entryRow>;

function streamedEntry(row: EntryRow): StreamedAuditEntry {
  return {
    ...auditExportEntryOf(row),
    employerId: row.employer_id,
    chain: { seq: Number(row.chain_seq), prevHash: row.chain_prev_hash, hash: row.chain_hash },
  };
}

/**
 * The employer's entries sealed after `afterSeq` (and at most `throughSeq`), oldest first, at most
 * `limit`. Both read models fill in commit order, so what they hold in common is a prefix: an entry
 * missing here now will not appear later behind one already returned.
 */
export async function entriesAfter(
  db: CommonQueryMethods,
  input: { employerId: string; afterSeq: bigint; throughSeq: bigint | null; limit: number },
): Promise<StreamedAuditEntry[]> {
  const rows = await db.any(sql.type(entryRow)`
    SELECT entry.*, ch.employer_id, ch.seq AS chain_seq, ch.prev_hash AS chain_prev_hash, ch.hash AS chain_hash
    FROM audit_chain ch
    JOIN LATERAL (SELECT ${auditEntryColumns} FROM audit_log l WHERE l.event_id = ch.event_id AND l.employer_id = ch.employer_id) AS entry ON true
    WHERE ch.employer_id = ${input.employerId} AND ch.seq > ${input.afterSeq.toString()}::bigint
      ${input.throughSeq === null ? sql.fragment`` : sql.fragment`AND ch.seq <= ${input.throughSeq.toString()}::bigint`}
    ORDER BY ch.seq LIMIT ${input.limit}`);
  return rows.map(streamedEntry);
}
