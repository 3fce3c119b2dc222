// Webhook delivery, end to end: events appended to the event store, through the projection job
// dispatcher, fan-out and delivery jobs on graphile-worker, to a local HTTPS receiver (127.0.0.1,
// self-signed certificate, in a worker thread so it does not share the service's event loop).
// (a) Sustained deliveries/s: a burst of events, each fanned out to several subscriptions; from the
//     first append to the last delivery received.
//     Next to it, in the same run, its physical reference: the same number of plain HTTPS POSTs of
//     bodies built the same way (buildWebhookRequest) to the same receiver, with undici at the worker's
//     concurrency; the ratio is what to compare between runs (this host's speed varies 2x).
// (b) Commit-to-delivery latency at a steady 50 events/s to one subscription: from the append's
//     commit (appendToStream resolved) to the receiver getting the request.
// (c) Fan-out: 1,000 authorization.reviewed events to 10 subscriptions each (bench/webhooks-fanout.ts,
//     which also runs alone as `npm run bench -- webhooks-fanout`).
//   npm run bench -- webhooks [burst events=400] [subscriptions=10] [steady seconds=10]
import { randomUUID } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';
import { Pool } from 'undici';
import { capabilities } from '../src/capabilities.ts';
import { z } from 'zod';
import type { RecordedEvent } from '../src/event-store/port.ts';
import { eventSchema } from '../src/event-store/schemas.ts';
import { createWebhooksCapability } from '../src/webhooks/capability.ts';
import { createWebhook } from '../src/webhooks/commands.ts';
import { webhookEventMappings } from '../src/webhooks/event-types.ts';
import { buildWebhookRequest, generateSigningSecret } from '../src/webhooks/signing.ts';
import { WORKER_CONCURRENCY } from '../src/worker/runner.ts';
import type { ReceivedRequest } from '../test/support/https-receiver.ts';
import { percentile, serveReceipts, startBenchService, startReceiverThread } from './support.ts';

type Receipt = { run: string; seq: number; at: number };

if (!isMainThread) await serveReceipts(deliveryReceived);

/** `count` POSTs of signed bodies like the service's, from WORKER_CONCURRENCY loops over one undici pool; POSTs per second. */
async function plainPosts(url: string, ca: string, count: number, subscriptions: number): Promise<number> {
  const secret = generateSigningSecret();
  const requests = Array.from({ length: count }, (_, seq) => ({
    path: `/in/${seq % subscriptions}`,
    ...buildWebhookRequest({
      deliveryId: randomUUID(), eventType: 'invoice.paid', timestamp: new Date().toISOString(), apiVersion: '2026-02-01',
      employerId: 'emp_bench_reference', data: { run: 'reference', seq }, secret,
    }),
  }));
  const pool = new Pool(url, { connections: WORKER_CONCURRENCY, connect: { ca } });
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: WORKER_CONCURRENCY }, async () => {
    while (next < count) {
      const { path, body, headers } = requests[next++]!;
      const response = await pool.request({ method: 'POST', path, body, headers });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`the receiver answered ${response.statusCode}`);
    }
  }));
  const perSecond = count / ((performance.now() - started) / 1000);
  await pool.close();
  return perSecond;
}

/** The receiver thread's receipt of a delivery: its (run, seq) and time. */
function deliveryReceived(request: ReceivedRequest): Receipt[] {
  const { data } = JSON.parse(request.body) as { data: { run: string; seq: number } };
  return [{ run: data.run, seq: data.seq, at: Date.now() }];
}

export default async function webhooksBench(args: string[]) {
  const burstEvents = Number(args[0] ?? 400);
  const subscriptions = Number(args[1] ?? 10);
  const steadySeconds = Number(args[2] ?? 10);
  const steadyRate = 50;

  const thread = await startReceiverThread<Receipt>(import.meta.url);
  const { url, ca, receipts } = thread;

  const mappings = {
    ...webhookEventMappings,
    BenchInvoicePaid: { webhookEvent: 'invoice.paid', data: (event: RecordedEvent) => ({ run: event.data.run, seq: event.data.seq }) },
  } as const;
  const service = await startBenchService({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, // the receiver is on 127.0.0.1
    roles: ['projections', 'worker'],
    capabilities: [
      ...capabilities.map((capability) => (capability.name === 'webhooks' ? createWebhooksCapability({ ca, eventMappings: mappings }) : capability)),
      { name: 'bench-invoices', events: [eventSchema('BenchInvoicePaid', z.object({ run: z.string(), seq: z.number() }))] },
    ],
  });

  const actor = { type: 'system', id: 'bench' } as const;
  const append = (employerId: string, run: string, seq: number) =>
    service.ctx.eventStore.appendToStream(`tenant-${employerId}.invoice-${randomUUID()}`, [{ type: 'BenchInvoicePaid', data: { run, seq } }], {
      expectedRevision: 'no_stream',
      metadata: { tenantId: employerId, actor, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
    });
  const subscribeTenant = async (employerId: string, count: number) => {
    for (let i = 0; i < count; i++) {
      await createWebhook(service.ctx, { tenantId: employerId, actor }, { url: `${url}/in/${i}`, events: ['invoice.paid'], description: null, maxFailures: 10 });
    }
  };
  const waitForReceipts = async (run: string, count: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mine = (await receipts()).filter((receipt) => receipt.run === run);
      if (mine.length >= count || Date.now() > deadline) return mine;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  try {
    // Warm-up: connections, prepared plans, the TLS session to the receiver.
    await subscribeTenant('emp_bench_warm', 1);
    for (let i = 0; i < 20; i++) await append('emp_bench_warm', 'warm', i);
    await waitForReceipts('warm', 20, 30_000);

    // (a) Burst.
    await subscribeTenant('emp_bench_burst', subscriptions);
    const burstStarted = Date.now();
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < burstEvents) await append('emp_bench_burst', 'burst', next++);
    }));
    const expected = burstEvents * subscriptions;
    const burst = await waitForReceipts('burst', expected, 120_000);
    const burstSeconds = (Math.max(...burst.map((receipt) => receipt.at)) - burstStarted) / 1000;
    console.log(`(a) burst: ${burstEvents} events x ${subscriptions} subscriptions = ${expected} deliveries`);
    const deliveriesPerSecond = burst.length / burstSeconds;
    console.log(`    received ${burst.length} in ${burstSeconds.toFixed(2)} s: ${deliveriesPerSecond.toFixed(0)} deliveries/s`);
    const postsPerSecond = await plainPosts(url, ca, expected, subscriptions);
    console.log(`    reference: ${expected} plain HTTPS POSTs (undici, ${WORKER_CONCURRENCY} concurrent) to the same receiver: ${postsPerSecond.toFixed(0)} /s; ` +
      `ratio deliveries / POSTs: ${(deliveriesPerSecond / postsPerSecond).toFixed(2)}`);

    // (b) Steady rate, one subscription.
    await subscribeTenant('emp_bench_steady', 1);
    const total = steadyRate * steadySeconds;
    const committedAt = new Array<number>(total);
    const started = performance.now();
    const appends: Promise<void>[] = [];
    for (let seq = 0; seq < total; seq++) {
      const due = started + (seq * 1000) / steadyRate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      appends.push(append('emp_bench_steady', 'steady', seq).then(() => void (committedAt[seq] = Date.now())));
    }
    await Promise.all(appends);
    const steady = await waitForReceipts('steady', total, 60_000);
    const latencies = steady.map((receipt) => receipt.at - committedAt[receipt.seq]!).sort((a, b) => a - b);
    console.log(`(b) steady: ${steadyRate} events/s for ${steadySeconds} s, 1 subscription: ${steady.length}/${total} delivered`);
    console.log(`    commit-to-delivery p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1]} ms`);
  } finally {
    await service.stopAll();
    thread.close();
  }
  // (c) Fan-out of a real workflow event type, on a service of its own (bench/webhooks-fanout.ts).
  // Imported here, not at the top: that module's worker thread would start its receiver in ours too.
  const { default: fanOutBench } = await import('./webhooks-fanout.ts');
  process.stdout.write('(c) ');
  await fanOutBench([]);
}
