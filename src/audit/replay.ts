// An employer's history as the auditor receives it (`events replay --format ndjson`): every event in
// commit order with its seal (seq, prevHash, hash), each signed checkpoint right after the event it
// signs. `events verify` runs scripts/verify-audit-chain.mjs's verifyChain over the same records.
import { setTimeout as delay } from 'node:timers/promises';
import { checkpointsAt, sealsOfEvents } from '../../projections/audit-chain/queries.ts';
import { sealedFieldsOf } from '../../projections/audit-chain/chain.ts';
import { AUDIT_CHAIN_PROJECTION } from '../../projections/audit-chain/projection.ts';
import { readCheckpoint } from '../../projections/runner.ts';
import type { AppContext } from '../app-context.ts';
import { comparePositions, formatPosition, START, type Position, type RecordedEvent } from '../event-store/port.ts';

const REPLAY_PAGE = 1000;
/** How long the CLI waits for sealing to reach the newest event before it replays or verifies. */
const SEALING_WAIT_MS = 60_000;

/** `erasedFields`: personal fields whose key was destroyed (crypto-shredding); outside the sealed fields. */
export type EventRecord = ReturnType<typeof sealedFieldsOf> & { position: string; seq: number | null; prevHash: string | null; hash: string | null; erasedFields?: readonly string[] };

/** Names the erased personal fields of a page of events: event id -> fields. */
export type ErasureMarker = (events: readonly RecordedEvent[]) => Promise<Map<string, readonly string[]>>;
export type CheckpointRecord = { checkpoint: { employerId: string; seq: number; headHash: string; signedAt: string; keyId: string; signature: string; publicKey: string } };

export async function* auditRecords(ctx: AppContext, tenantId: string, from: Position = START, markErased?: ErasureMarker): AsyncGenerator<EventRecord | CheckpointRecord> {
  const publicKey = ctx.auditSigner.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  let after = from;
  for (;;) {
    const batch = await ctx.eventStore.readAll({ after, tenantId, maxCount: REPLAY_PAGE });
    if (batch.length === 0) return;
    const seals = await sealsOfEvents(ctx.db.slonik, tenantId, batch.map((event) => event.eventId));
    const signed = await checkpointsAt(ctx.db.slonik, tenantId, [...seals.values()].map((seal) => seal.seq));
    const checkpointBySeq = new Map(signed.map((checkpoint) => [checkpoint.seq, checkpoint]));
    const erased = (await markErased?.(batch)) ?? new Map<string, readonly string[]>();
    for (const event of batch) {
      const seal = seals.get(event.eventId);
      const erasedFields = erased.get(event.eventId);
      yield { position: formatPosition(event.position), ...sealedFieldsOf(event), seq: seal?.seq ?? null, prevHash: seal?.prevHash ?? null, hash: seal?.hash ?? null, ...(erasedFields ? { erasedFields } : {}) };
      const checkpoint = seal && checkpointBySeq.get(seal.seq);
      if (checkpoint) yield { checkpoint: { ...checkpoint, publicKey } };
    }
    after = batch[batch.length - 1]!.position;
  }
}

/**
 * Waits (bounded) until the audit chain has sealed up to the newest event, so a replay or verification
 * taken now covers everything. The CLI runs the projections in-process, so this is seconds at most.
 */
export async function waitForSealing(ctx: AppContext): Promise<void> {
  const head = await ctx.eventStore.headPosition();
  const deadline = Date.now() + SEALING_WAIT_MS;
  while (comparePositions(await readCheckpoint(ctx.db.slonik, AUDIT_CHAIN_PROJECTION), head) < 0) {
    if (Date.now() > deadline) throw new Error(`The audit chain has not sealed up to ${formatPosition(head)} within ${SEALING_WAIT_MS / 1000} s: is the audit-chain projection parked? See npm run cli -- projections status`);
    await delay(50);
  }
}
