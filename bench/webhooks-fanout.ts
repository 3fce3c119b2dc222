// Webhook fan-out of a real workflow event type: 1,000 `AuthorizationReviewed` events (the domain event
// behind authorization.reviewed, with its real mapping and data) appended to the event store by 8
// concurrent writers, each fanned out to the employer's 10 subscriptions, through the job dispatcher,
// fan-out and delivery jobs on graphile-worker, to a local HTTPS receiver in a worker thread (so it
// does not share the service's event loop). Prints deliveries/s (first append to last delivery) and
// commit-to-delivery latency over every delivery (from its event's append resolving to the receiver
// getting the request).
//   npm run bench -- webhooks-fanout [events=1000] [subscriptions=10]
import { randomUUID } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';
import { capabilities } from '../src/capabilities.ts';
import { createWebhooksCapability } from '../src/webhooks/capability.ts';
import { createWebhook } from '../src/webhooks/commands.ts';
import type { ReceivedRequest } from '../test/support/https-receiver.ts';
import { percentile, serveReceipts, startBenchService, startReceiverThread } from './support.ts';

/** authorizationId and arrival time of one delivery. */
type Receipt = [string, number];

if (!isMainThread) await serveReceipts(deliveryReceived);

/** The receiver thread's receipt of a delivery: its authorization's id and time. */
function deliveryReceived(request: ReceivedRequest): Receipt[] {
  return [[(JSON.parse(request.body) as { data: { authorizationId: string } }).data.authorizationId, Date.now()]];
}

export default async function webhooksFanOutBench(args: string[]) {
  const events = Number(args[0] ?? 1000);
  const subscriptions = Number(args[1] ?? 10);
  const thread = await startReceiverThread<Receipt>(import.meta.url);
  const { url, ca, receipts } = thread;

  const service = await startBenchService({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, // the receiver is on 127.0.0.1
    roles: ['projections', 'worker'],
    capabilities: capabilities.map((capability) => (capability.name === 'webhooks' ? createWebhooksCapability({ ca }) : capability)),
  });
  const actor = { type: 'user', id: 'usr_bench' } as const;
  const review = (employerId: string, authorizationId: string) =>
    service.ctx.eventStore.appendToStream(
      `tenant-${employerId}.authorization-${authorizationId}`,
      [{ type: 'AuthorizationReviewed', data: { authorizationId, patientId: 'pat_bench', decision: 'approved', note: null, reviewedBy: actor.id } }],
      { expectedRevision: 'any', metadata: { tenantId: employerId, actor, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() } },
    );
  const waitForReceipts = async (ids: Set<string>, count: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mine = (await receipts()).filter(([id]) => ids.has(id));
      if (mine.length >= count || Date.now() > deadline) return mine;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const subscribe = async (employerId: string, count: number) => {
    for (let i = 0; i < count; i++) {
      await createWebhook(service.ctx, { tenantId: employerId, actor }, { url: `${url}/in/${i}`, events: ['authorization.reviewed'], description: null, maxFailures: 10 });
    }
  };

  try {
    // Warm-up: connections, prepared plans, TLS sessions.
    await subscribe('emp_fanout_warm', 1);
    const warm = Array.from({ length: 20 }, () => `auth_${randomUUID()}`);
    for (const id of warm) await review('emp_fanout_warm', id);
    await waitForReceipts(new Set(warm), warm.length, 30_000);

    await subscribe('emp_fanout', subscriptions);
    const ids = Array.from({ length: events }, () => `auth_${randomUUID()}`);
    const committedAt = new Map<string, number>();
    const started = Date.now();
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < events) {
        const id = ids[next++]!;
        await review('emp_fanout', id);
        committedAt.set(id, Date.now());
      }
    }));
    const expected = events * subscriptions;
    const received = await waitForReceipts(new Set(ids), expected, 300_000);
    const seconds = (Math.max(...received.map(([, at]) => at)) - started) / 1000;
    const latencies = received.map(([id, at]) => at - committedAt.get(id)!).sort((a, b) => a - b);
    console.log(`fan-out: ${events} authorization.reviewed events x ${subscriptions} subscriptions = ${expected} deliveries`);
    console.log(`    received ${received.length} in ${seconds.toFixed(2)} s: ${(received.length / seconds).toFixed(0)} deliveries/s`);
    console.log(`    commit-to-delivery p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies[latencies.length - 1]} ms`);
  } finally {
    await service.stopAll();
    thread.close();
  }
}
