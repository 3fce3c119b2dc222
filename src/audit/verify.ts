// `events verify --tenant X`: the standalone verifier's algorithm (scripts/verify-audit-chain.mjs) over
// the tenant's replay records, with the service's own public key pinned, plus what only the database
// can tell: which event a removal took away, and removals at the end of the chain (a file cannot
// show what is missing after its last line).
import { chainHeadSeq, eventIdAtSeq } from '../../projections/audit-chain/queries.ts';
import { verifyChain, type ChainBroken, type ChainVerified } from '../../scripts/verify-audit-chain.mjs';
import type { AppContext } from '../app-context.ts';
import { auditRecords } from './replay.ts';

export async function verifyTenantChain(ctx: AppContext, tenantId: string): Promise<ChainVerified | ChainBroken> {
  const result = await verifyChain(auditRecords(ctx, tenantId), { publicKey: ctx.auditSigner.publicKey });
  if (!result.ok) {
    if (result.reason !== 'removed' || result.missingSeq === undefined) return result;
    const removed = await eventIdAtSeq(ctx.db.slonik, tenantId, result.missingSeq);
    return { ...result, eventId: removed, seq: result.missingSeq, message: `event ${removed} (seq ${result.missingSeq}) was removed; ${result.message}` };
  }
  const sealed = await chainHeadSeq(ctx.db.slonik, tenantId);
  if (sealed <= result.headSeq) return result;
  const removed = await eventIdAtSeq(ctx.db.slonik, tenantId, result.headSeq + 1);
  return { ok: false, line: result.events, eventId: removed, seq: result.headSeq + 1, reason: 'removed', message: `event ${removed} (seq ${result.headSeq + 1}) was sealed but is no longer in the event store (the chain has ${sealed} events)` };
}
