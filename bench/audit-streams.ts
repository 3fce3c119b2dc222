// Audit streams, end to end: audited events appended to the event store, through the audit and
// audit-chain read models, the kick and the delivery runs on graphile-worker, to a local HTTPS
// receiver (127.0.0.1, self-signed, in a worker thread so it does not share the service's loop).
// (a) A backlog: `entries` audit entries already sealed, then an ndjson stream created (start
//     earliest): entries/s from its creation to the last entry received. Next to it, in the same run,
//     its physical reference: the same batches (buildBatchRequest, AUDIT_STREAM_BATCH_MAX_ENTRIES
//     each) POSTed one after the other, as one stream sends them, to the same receiver; the ratio is
//     what to compare between runs.
// (b) Commit-to-delivery latency at a steady 50 audited events/s to one stream.
//   npm run bench -- audit-streams [backlog entries=20000] [steady seconds=10]
import { randomUUID } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';
import { Pool } from 'undici';
import type { StreamedAuditEntry } from '../projections/audit-streams/entries.ts';
import { createAuditStreamsCapability } from '../src/audit-streams/capability.ts';
import { createAuditStream } from '../src/audit-streams/commands.ts';
import { batchIdOf } from '../src/audit-streams/delivery.ts';
import { buildBatchRequest } from '../src/audit-streams/presets.ts';
import { capabilities } from '../src/capabilities.ts';
import { generateSigningSecret } from '../src/crypto/webhook-signature.ts';
import type { Position } from '../src/event-store/port.ts';
import type { ReceivedRequest } from '../test/support/https-receiver.ts';
import { percentile, serveReceipts, startBenchService, startReceiverThread } from './support.ts';

type Receipt = { run: string; seq: number; at: number };
const BATCH_ENTRIES = 500;

if (!isMainThread) await serveReceipts(entriesReceived);

/** The receiver thread's receipt of a batch: (run, seq, time) of every entry (its target id is `bench-<run>-<seq>`). */
function entriesReceived(request: ReceivedRequest): Receipt[] {
  const at = Date.now();
  return request.body.split('\n').flatMap((line) => {
    const match = line === '' ? null : /^bench-(\w+)-(\d+)$/.exec((JSON.parse(line) as { target: { id: string } | null }).target?.id ?? '');
    return match ? [{ run: match[1]!, seq: Number(match[2]), at }] : [];
  });
}

/** `entries` entries in batches of BATCH_ENTRIES, POSTed one at a time as a stream sends them; entries per second. */
async function plainBatches(url: string, ca: string, entries: number): Promise<number> {
  const secret = generateSigningSecret();
  const entry = (seq: number): StreamedAuditEntry => ({
    id: randomUUID(), employerId: 'emp_bench_reference', action: 'audit_stream.pause', actor: { type: 'system', id: 'bench' },
    target: { type: 'audit_stream', id: `bench-reference-${seq}` }, occurredAt: new Date().toISOString(), requestId: randomUUID(), ipAddress: null, userAgent: null, details: {},
    chain: { seq: seq + 1, hash: 'a'.repeat(64), prevHash: 'b'.repeat(64) },
  });
  const pool = new Pool(url, { connections: 1, connect: { ca } });
  const started = performance.now();
  for (let from = 0; from < entries; from += BATCH_ENTRIES) {
    const batch = Array.from({ length: Math.min(BATCH_ENTRIES, entries - from) }, (_, index) => entry(from + index));
    const request = buildBatchRequest({
      preset: 'ndjson', url: `${url}/reference`, secret, batchId: batchIdOf('reference', BigInt(from), BigInt(from + batch.length)),
      entries: batch, host: '127.0.0.1', signedAt: new Date(),
    });
    const response = await pool.request({ method: 'POST', path: '/reference', body: request.body, headers: request.headers });
    await response.body.dump();
    if (response.statusCode !== 200) throw new Error(`the receiver answered ${response.statusCode}`);
  }
  const perSecond = entries / ((performance.now() - started) / 1000);
  await pool.close();
  return perSecond;
}

export default async function auditStreamsBench(args: string[]) {
  const backlogEntries = Number(args[0] ?? 20_000);
  const steadySeconds = Number(args[1] ?? 10);
  const steadyRate = 50;

  const thread = await startReceiverThread<Receipt>(import.meta.url);
  const { url, ca, receipts } = thread;
  const service = await startBenchService({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', AUDIT_STREAM_BATCH_MAX_ENTRIES: String(BATCH_ENTRIES) },
    roles: ['projections', 'worker'],
    capabilities: capabilities.map((capability) => (capability.name === 'audit-streams' ? createAuditStreamsCapability({ ca }) : capability)),
  });

  const actor = { type: 'system', id: 'bench' } as const;
  // AuditStreamPaused of streams that do not exist: an audit entry each (target `bench-<run>-<seq>`), nothing else.
  const append = async (employerId: string, run: string, from: number, count: number): Promise<Position> => {
    const result = await service.ctx.eventStore.appendToStream(`tenant-${employerId}.auditStream-bench-${randomUUID()}`,
      Array.from({ length: count }, (_, index) => ({ type: 'AuditStreamPaused', data: { streamId: `bench-${run}-${from + index}` } })), {
        expectedRevision: 'no_stream',
        metadata: { tenantId: employerId, actor, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
      });
    return result.position;
  };
  const waitForReceipts = async (run: string, count: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mine = (await receipts()).filter((receipt) => receipt.run === run);
      if (mine.length >= count || Date.now() > deadline) return mine;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const stream = (employerId: string, name: string) =>
    createAuditStream(service.ctx, { tenantId: employerId, actor }, { name, preset: 'ndjson', url: `${url}/${name}`, token: null, start: 'earliest' });

  try {
    // Warm-up: connections, plans, the TLS session.
    await stream('emp_bench_warm', 'warm');
    await append('emp_bench_warm', 'warm', 0, 20);
    await waitForReceipts('warm', 20, 30_000);

    // (a) Backlog.
    let last: Position | null = null;
    for (let from = 0; from < backlogEntries; from += 500) last = await append('emp_bench_backlog', 'backlog', from, Math.min(500, backlogEntries - from));
    // Every read model past the backlog (audit-streams too: each AuditStreamPaused is an UPDATE there).
    while (!(await service.ctx.waitForReadModels(last!, ['audit', 'audit-chain', 'audit-streams'])));
    const started = Date.now();
    await stream('emp_bench_backlog', 'backlog');
    const backlog = await waitForReceipts('backlog', backlogEntries, 300_000);
    const seconds = (Math.max(...backlog.map((receipt) => receipt.at)) - started) / 1000;
    const perSecond = backlog.length / seconds;
    console.log(`(a) backlog: ${backlog.length}/${backlogEntries} entries in ${seconds.toFixed(2)} s: ${perSecond.toFixed(0)} entries/s (batches of ${BATCH_ENTRIES})`);
    const reference = await plainBatches(url, ca, backlogEntries);
    console.log(`    reference: the same batches as plain HTTPS POSTs, one at a time, to the same receiver: ${reference.toFixed(0)} entries/s; ratio stream / POSTs: ${(perSecond / reference).toFixed(2)}`);

    // (b) Steady rate.
    await stream('emp_bench_steady', 'steady');
    const total = steadyRate * steadySeconds;
    const committedAt = new Array<number>(total);
    const steadyStarted = performance.now();
    const appends: Promise<void>[] = [];
    for (let seq = 0; seq < total; seq++) {
      const wait = steadyStarted + (seq * 1000) / steadyRate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      appends.push(append('emp_bench_steady', 'steady', seq, 1).then(() => void (committedAt[seq] = Date.now())));
    }
    await Promise.all(appends);
    const steady = await waitForReceipts('steady', total, 60_000);
    const latencies = steady.map((receipt) => receipt.at - committedAt[receipt.seq]!).sort((a, b) => a - b);
    console.log(`(b) steady: ${steadyRate} audited events/s for ${steadySeconds} s, one stream: ${steady.length}/${total} delivered`);
    console.log(`    commit-to-delivery p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1]} ms`);
  } finally {
    await service.stopAll();
    thread.close();
  }
}
