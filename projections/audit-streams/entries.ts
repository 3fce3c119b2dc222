// The audit entries a stream sends: each audit_log entry with its seal in the audit chain (seq, hash,
// prev hash), in chain order (the employer's commit order, never rebuilt), so a destination can both
// order them and check them against `events replay` and the signed checkpoints. streamedEntry is the
// one place the sent shape is made.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { auditEntry } from '../audit/queries.ts';

export const streamedAuditEntry = auditEntry
  .extend({
    employerId: z.string(),
    chain: z.object({
      seq: z.number().int().meta({ description: "1-based position of the entry's event in the employer's audit chain: the stream's order." }),
      prevHash: z.string().meta({ description: 'Hex SHA-256 of the link before (64 zeros for seq 1).' }),
      hash: z.string().meta({ description: 'Hex SHA-256(prevHash || canonical JSON of the event): what scripts/verify-audit-chain.mjs recomputes.' }),
    }),
  })
  .meta({ id: 'StreamedAuditEntry' });
export type StreamedAuditEntry = z.infer<typeof streamedAuditEntry>;

const entryRow = z.object({
  seq: z.bigint(), hash: z.string(), prev_hash: z.string(),
  event_id: z.string(), employer_id: z.string(), action: z.string(),
  actor_type: z.enum(['user', 'apiKey', 'scimToken', 'smartClient', 'system']), actor_id: z.string(),
  target_type: z.string().nullable(), target_id: z.string().nullable(),
  details: z.record(z.string(), z.unknown()), occurred_at: z.string(), request_id: z.string().nullable(),
});
type EntryRow = z.infer<typeof entryRow>;

function streamedEntry(row: EntryRow): StreamedAuditEntry {
  return {
    id: row.event_id,
    employerId: row.employer_id,
    action: row.action,
    actor: { type: row.actor_type, id: row.actor_id },
    target: row.target_type !== null && row.target_id !== null ? { type: row.target_type, id: row.target_id } : null,
    occurredAt: row.occurred_at,
    requestId: row.request_id,
    details: row.details,
    chain: { seq: Number(row.seq), prevHash: row.prev_hash, hash: row.hash },
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
    SELECT ch.seq, ch.hash, ch.prev_hash, l.event_id, l.employer_id, l.action, l.actor_type, l.actor_id, l.target_type, l.target_id,
           l.details, l.occurred_at, l.request_id
    FROM audit_chain ch JOIN audit_log l ON l.event_id = ch.event_id AND l.employer_id = ch.employer_id
    WHERE ch.employer_id = ${input.employerId} AND ch.seq > ${input.afterSeq.toString()}::bigint
      ${input.throughSeq === null ? sql.fragment`` : sql.fragment`AND ch.seq <= ${input.throughSeq.toString()}::bigint`}
    ORDER BY ch.seq LIMIT ${input.limit}`);
  return rows.map(streamedEntry);
}
