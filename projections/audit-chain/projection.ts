// Seals each employer's events into the audit hash chain (src/audit/chain.ts) in commit order, beside
// the append path: appends never wait for it (not awaited by commands). A checkpoint of an employer's
// head is signed at the event that makes 1,000 (AUDIT_CHECKPOINT_EVERY_EVENTS) sealed since its last
// one; the 10-minute job (signDueCheckpoints) signs the rest. Not rebuildable: recomputing the chain
// from the events as they are now would launder any change made to them since they were sealed.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { chainHash, GENESIS_HASH, sealedFieldsOf, signCheckpoint, type SignedCheckpoint } from '../../src/audit/chain.ts';
import type { AuditSigner } from '../../src/crypto/signing-key.ts';
import type { Projection } from '../../src/event-store/projection.ts';

export const AUDIT_CHAIN_PROJECTION = 'audit-chain';
/**
 * While commands append, events are sealed in batches gathered this long: a few sealing transactions
 * a second beside the appends instead of one per append (npm run bench -- event-store, (d)).
 */
export const AUDIT_CHAIN_BATCH_WINDOW_MS = 100;

// slonik returns int8 as bigint; sequence numbers stay far below 2^53, so they are handled as numbers.
const headRow = z.object({ employer_id: z.string(), seq: z.bigint(), hash: z.string(), checkpointed_seq: z.bigint() });
type Head = { employer_id: string; seq: number; hash: string; checkpointed_seq: number };
const headOf = (row: z.infer<typeof headRow>): Head => ({ ...row, seq: Number(row.seq), checkpointed_seq: Number(row.checkpointed_seq) });

export function auditChainProjection(deps: { signer: AuditSigner; checkpointEveryEvents: number }): Projection {
  return {
    name: AUDIT_CHAIN_PROJECTION,
    tables: ['audit_chain', 'audit_chain_heads', 'audit_checkpoints'],
    // Every event of every tenant: the chain is over the whole history, not only audited actions.
    eventTypes: 'all',
    rebuildable: false,
    awaitedByCommands: false,
    batchWindowMs: AUDIT_CHAIN_BATCH_WINDOW_MS,
    async apply(tx, events) {
      const employers = [...new Set(events.flatMap((event) => (event.metadata.tenantId ? [event.metadata.tenantId] : [])))];
      if (employers.length === 0) return;
      const stored = await tx.any(sql.type(headRow)`
        SELECT employer_id, seq, hash, checkpointed_seq FROM audit_chain_heads WHERE employer_id = ANY(${sql.array(employers, 'text')})`);
      const heads = new Map<string, Head>(stored.map((row) => [row.employer_id, headOf(row)]));
      const links: Array<{ employer_id: string; seq: number; event_id: string; prev_hash: string; hash: string }> = [];
      const checkpoints: SignedCheckpoint[] = [];
      const signedAt = new Date().toISOString();
      for (const event of events) {
        const employerId = event.metadata.tenantId;
        if (!employerId) continue;
        const previous = heads.get(employerId) ?? { employer_id: employerId, seq: 0, hash: GENESIS_HASH, checkpointed_seq: 0 };
        const head = { ...previous, seq: previous.seq + 1, hash: chainHash(previous.hash, sealedFieldsOf(event)) };
        links.push({ employer_id: employerId, seq: head.seq, event_id: event.eventId, prev_hash: previous.hash, hash: head.hash });
        // At the very event, however many events the batch holds.
        if (head.seq - head.checkpointed_seq >= deps.checkpointEveryEvents) {
          checkpoints.push(signCheckpoint(deps.signer.privateKey, { employerId, seq: head.seq, headHash: head.hash, signedAt }));
          head.checkpointed_seq = head.seq;
        }
        heads.set(employerId, head);
      }
      const newHeads = employers.map((employerId) => heads.get(employerId)!);
      // One statement for the links, the heads and the checkpoints (a CTE may not update a row twice,
      // so a head takes its new checkpointed_seq in its own upsert): this runs for every batch.
      await tx.query(sql.unsafe`
        WITH links AS (
          INSERT INTO audit_chain (employer_id, seq, event_id, prev_hash, hash)
          SELECT employer_id, seq, event_id, prev_hash, hash
          FROM jsonb_to_recordset(${sql.jsonb(links)}) AS r(employer_id text, seq bigint, event_id uuid, prev_hash text, hash text)),
        signed AS (${checkpointsInsert(checkpoints)})
        INSERT INTO audit_chain_heads (employer_id, seq, hash, checkpointed_seq)
        SELECT employer_id, seq, hash, checkpointed_seq
        FROM jsonb_to_recordset(${sql.jsonb(newHeads)}) AS r(employer_id text, seq bigint, hash text, checkpointed_seq bigint)
        ON CONFLICT (employer_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash,
          checkpointed_seq = GREATEST(audit_chain_heads.checkpointed_seq, EXCLUDED.checkpointed_seq)`);
    },
  };
}

/** The INSERT of signed checkpoints (none stored twice), returning the employer and seq of each stored. */
function checkpointsInsert(checkpoints: SignedCheckpoint[]) {
  return sql.fragment`
    INSERT INTO audit_checkpoints (employer_id, seq, head_hash, signed_at, key_id, signature)
    SELECT "employerId", seq, "headHash", "signedAt", "keyId", signature
    FROM jsonb_to_recordset(${sql.jsonb(checkpoints)}) AS r("employerId" text, seq bigint, "headHash" text, "signedAt" timestamptz, "keyId" text, signature text)
    ON CONFLICT (employer_id, seq) DO NOTHING
    RETURNING employer_id, seq`;
}

/** Stores signed checkpoints and moves each head's checkpointed_seq (never backwards). */
async function insertCheckpoints(db: CommonQueryMethods, checkpoints: SignedCheckpoint[]): Promise<void> {
  if (checkpoints.length === 0) return;
  await db.query(sql.unsafe`
    WITH signed AS (${checkpointsInsert(checkpoints)})
    UPDATE audit_chain_heads SET checkpointed_seq = GREATEST(audit_chain_heads.checkpointed_seq, signed.seq)
    FROM signed WHERE audit_chain_heads.employer_id = signed.employer_id`);
}

/**
 * Signs a checkpoint of every employer head with events sealed since its last checkpoint (the
 * 10-minute job; also what `events verify` suggests when the tail is unsigned). Returns how many.
 */
export async function signDueCheckpoints(db: CommonQueryMethods, signer: AuditSigner): Promise<number> {
  const due = (await db.any(sql.type(headRow)`SELECT employer_id, seq, hash, checkpointed_seq FROM audit_chain_heads WHERE seq > checkpointed_seq`)).map(headOf);
  const signedAt = new Date().toISOString();
  await insertCheckpoints(db, due.map((head) => signCheckpoint(signer.privateKey, { employerId: head.employer_id, seq: head.seq, headHash: head.hash, signedAt })));
  return due.length;
}
