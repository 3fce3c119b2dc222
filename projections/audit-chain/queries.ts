// Reads of the audit chain: each event's seal, signed checkpoints and an employer's head, for the
// replay, `events verify` and the tests.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { SignedCheckpoint } from './chain.ts';

export type Seal = { seq: number; prevHash: string; hash: string };

// slonik returns int8 as bigint; sequence numbers stay far below 2^53.
const sealRow = z.object({ event_id: z.string(), seq: z.bigint(), prev_hash: z.string(), hash: z.string() });

/** The seal of each of these events of the employer that has one, by event id. */
export async function sealsOfEvents(db: CommonQueryMethods, employerId: string, eventIds: string[]): Promise<Map<string, Seal>> {
  const rows = await db.any(sql.type(sealRow)`
    SELECT event_id, seq, prev_hash, hash FROM audit_chain
    WHERE event_id = ANY(${sql.array(eventIds, 'uuid')}) AND employer_id = ${employerId}`);
  return new Map(rows.map((row) => [row.event_id, { seq: Number(row.seq), prevHash: row.prev_hash, hash: row.hash }]));
}

const checkpointRow = z.object({
  employer_id: z.string(), seq: z.bigint(), head_hash: z.string(), signed_at: z.string(), key_id: z.string(), signature: z.string(),
});

/** The employer's checkpoints at these sequence numbers. */
export async function checkpointsAt(db: CommonQueryMethods, employerId: string, seqs: number[]): Promise<SignedCheckpoint[]> {
  const rows = await db.any(sql.type(checkpointRow)`
    SELECT employer_id, seq, head_hash, signed_at, key_id, signature FROM audit_checkpoints
    WHERE employer_id = ${employerId} AND seq = ANY(${sql.array(seqs, 'int8')}) ORDER BY seq`);
  return rows.map((row) => ({ employerId: row.employer_id, seq: Number(row.seq), headHash: row.head_hash, signedAt: row.signed_at, keyId: row.key_id, signature: row.signature }));
}

/** The newest sealed seq of the employer (0 when none). */
export async function chainHeadSeq(db: CommonQueryMethods, employerId: string): Promise<number> {
  const seq = await db.maybeOneFirst(sql.type(z.object({ seq: z.bigint() }))`SELECT seq FROM audit_chain_heads WHERE employer_id = ${employerId}`);
  return Number(seq ?? 0n);
}

/** The event sealed at `seq` of the employer, or null. */
export async function eventIdAtSeq(db: CommonQueryMethods, employerId: string, seq: number): Promise<string | null> {
  return db.maybeOneFirst(sql.type(z.object({ event_id: z.string() }))`SELECT event_id FROM audit_chain WHERE employer_id = ${employerId} AND seq = ${seq}`);
}
