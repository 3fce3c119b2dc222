// One side of `event-store` (e): our Postgres event store or Emmett's (`@event-driven-io/emmett-postgresql`),
// each in a process of its own (Emmett's driver layer, dumbo, changes `pg`'s type parsers for the
// whole process), on a pool of CONCURRENCY connections, driven by the same loops with the same events.
//
//   node bench/workers/event-store-peer.ts <ours|emmett> <connection URI> seed
//   node bench/workers/event-store-peer.ts <ours|emmett> <connection URI> <milliseconds per workload>
//
// `seed` writes SEED_STREAMS streams of STREAM_EVENTS events through the side's own append. A round
// warms each workload up, measures it, and prints one JSON line: per workload, operations/s, events/s
// and latency p50/p99 in ms.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { capabilities } from '../../src/capabilities.ts';
import { createNotifications } from '../../src/db/notifications.ts';
import { START, type Position } from '../../src/event-store/port.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { eventRegistryOf } from '../../src/main.ts';
import { runConcurrently } from '../support.ts';

export const CONCURRENCY = 16;
export const SEED_STREAMS = 50;
/** Events of each seeded stream: what "read one stream" reads. */
export const STREAM_EVENTS = 100;
/** Events "read all" reads from position 0 per operation, in pages of READ_PAGE (fewer than were seeded: a round holds several operations per client). */
export const READ_ALL_EVENTS = 2000;
const READ_PAGE = 1000;
const WARM_UP_MS = 1000;

/** What both sides store per event: our `EmployerCreated` and its metadata, byte for byte the same JSON. */
const eventData = (employerId: string) => ({ employerId, name: 'Acme', createdAt: new Date().toISOString() });
export const eventMetadata = (tenantId: string) => ({
  tenantId,
  actor: { type: 'system' as const, id: 'bench' },
  correlationId: randomUUID(),
  causationId: null,
  schemaVersion: 1,
  occurredAt: new Date().toISOString(),
});
const seededStream = (n: number) => `tenant-peer.employer-seed-${n}`;

/** The four operations, each side in its own API's terms; `revision` is what the next append to an existing stream expects. */
type Side = {
  appendToNewStream(streamName: string, tenantId: string): Promise<void>;
  appendToExistingStream(streamName: string, tenantId: string, revision: bigint | null): Promise<bigint>;
  appendSeedStream(streamName: string): Promise<void>;
  readStream(streamName: string): Promise<number>;
  /** Reads READ_ALL_EVENTS events in global order from position 0, READ_PAGE at a time. */
  readAllFromStart(): Promise<number>;
  close(): Promise<void>;
};

async function ours(connectionUri: string): Promise<Side> {
  // As the service's event-store pool (src/db/pools.ts), with as many connections as Emmett's.
  const pool = new pg.Pool({ connectionString: connectionUri, max: CONCURRENCY, idleTimeoutMillis: 0, options: '-c plan_cache_mode=force_generic_plan' });
  const notifications = createNotifications(connectionUri);
  await notifications.ready();
  const store = createPostgresEventStore(pool, notifications, eventRegistryOf(capabilities));
  const append = (streamName: string, tenantId: string, count: number, expectedRevision: bigint | 'no_stream') =>
    store.appendToStream(streamName, Array.from({ length: count }, (_, i) => ({ type: 'EmployerCreated', data: eventData(`${tenantId}-${i}`) })), {
      expectedRevision,
      metadata: eventMetadata(tenantId),
    });
  return {
    appendToNewStream: async (streamName, tenantId) => void (await append(streamName, tenantId, 1, 'no_stream')),
    appendToExistingStream: async (streamName, tenantId, revision) => (await append(streamName, tenantId, 1, revision ?? 'no_stream')).nextExpectedRevision,
    appendSeedStream: async (streamName) => void (await append(streamName, 'peer', STREAM_EVENTS, 'no_stream')),
    readStream: async (streamName) => (await store.readStream(streamName)).length,
    readAllFromStart: async () => {
      let after: Position = START;
      let read = 0;
      while (read < READ_ALL_EVENTS) {
        const page = await store.readAll({ after, maxCount: READ_PAGE });
        if (page.length === 0) break;
        read += page.length;
        after = page[page.length - 1]!.position;
      }
      return read;
    },
    close: async () => {
      await store.close();
      await notifications.close();
      await pool.end();
    },
  };
}

async function emmett(connectionUri: string): Promise<Side> {
  const { getPostgreSQLEventStore, readMessagesBatch } = await import('@event-driven-io/emmett-postgresql');
  const { STREAM_DOES_NOT_EXIST } = await import('@event-driven-io/emmett');
  const { dumbo } = await import('@event-driven-io/dumbo');
  const pool = new pg.Pool({ connectionString: connectionUri, max: CONCURRENCY, idleTimeoutMillis: 0 });
  const store = getPostgreSQLEventStore(connectionUri, { connectionOptions: { pool } });
  // Emmett has no public "read all": its consumers and projections page through the global order
  // with readMessagesBatch on a dumbo executor, as here.
  const executor = dumbo({ connectionString: connectionUri, pool });
  await store.schema.migrate();
  const events = (tenantId: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({ type: 'EmployerCreated', data: eventData(`${tenantId}-${i}`), metadata: eventMetadata(tenantId) }));
  return {
    appendToNewStream: async (streamName, tenantId) => void (await store.appendToStream(streamName, events(tenantId, 1), { expectedStreamVersion: STREAM_DOES_NOT_EXIST })),
    appendToExistingStream: async (streamName, tenantId, revision) =>
      (await store.appendToStream(streamName, events(tenantId, 1), { expectedStreamVersion: revision ?? STREAM_DOES_NOT_EXIST })).nextExpectedStreamVersion,
    appendSeedStream: async (streamName) => void (await store.appendToStream(streamName, events('peer', STREAM_EVENTS), { expectedStreamVersion: STREAM_DOES_NOT_EXIST })),
    readStream: async (streamName) => (await store.readStream(streamName)).events.length,
    readAllFromStart: async () => {
      let read = 0;
      let batch = await readMessagesBatch(executor.execute, { from: 0n, batchSize: READ_PAGE });
      for (;;) {
        read += batch.messages.length;
        if (read >= READ_ALL_EVENTS || batch.messages.length === 0) return read;
        batch = await readMessagesBatch(executor.execute, { after: batch.currentGlobalPosition, batchSize: READ_PAGE });
      }
    },
    close: async () => {
      await store.close();
      await pool.end().catch(() => {});
    },
  };
}

export type WorkloadResult = { operationsPerSecond: number; eventsPerSecond: number; p50: number; p99: number };
export type RoundResult = Record<'newStreams' | 'existingStreams' | 'readStream' | 'readAll', WorkloadResult>;

async function round(side: Side, durationMs: number): Promise<RoundResult> {
  const id = randomUUID().slice(0, 8);
  const measure = async (eventsPerOperation: number, task: (worker: number, i: number) => Promise<void>): Promise<WorkloadResult> => {
    await runConcurrently(CONCURRENCY, WARM_UP_MS, task);
    const result = await runConcurrently(CONCURRENCY, durationMs, task);
    return { operationsPerSecond: result.perSecond, eventsPerSecond: result.perSecond * eventsPerOperation, p50: result.p50, p99: result.p99 };
  };
  const newStreams = await measure(1, (worker, i) => side.appendToNewStream(`tenant-peer${worker}.employer-${id}-${worker}-${i}-${randomUUID()}`, `peer${worker}`));
  // Each client appends to streams of its own, one after the other, each append expecting the revision the last one left.
  const revisions = new Map<string, bigint | null>();
  const existingStreams = await measure(1, async (worker, i) => {
    const streamName = `tenant-peer${worker}.employer-${id}-existing-${worker}-${i % 10}`;
    revisions.set(streamName, await side.appendToExistingStream(streamName, `peer${worker}`, revisions.get(streamName) ?? null));
  });
  const readStream = await measure(STREAM_EVENTS, async (worker, i) => {
    const read = await side.readStream(seededStream((worker * 7 + i) % SEED_STREAMS));
    if (read !== STREAM_EVENTS) throw new Error(`read ${read} events of a seeded stream, expected ${STREAM_EVENTS}`);
  });
  const readAll = await measure(READ_ALL_EVENTS, async () => {
    const read = await side.readAllFromStart();
    if (read < READ_ALL_EVENTS) throw new Error(`read ${read} events from position 0, expected at least ${READ_ALL_EVENTS}`);
  });
  return { newStreams, existingStreams, readStream, readAll };
}

export const peerScript = import.meta.filename;

if (process.argv[1] === import.meta.filename) {
  const [which, connectionUri, what] = process.argv.slice(2);
  if ((which !== 'ours' && which !== 'emmett') || !connectionUri || !what) {
    console.error('usage: event-store-peer.ts <ours|emmett> <connection URI> <seed|milliseconds per workload>');
    process.exit(2);
  }
  const side = await (which === 'ours' ? ours : emmett)(connectionUri);
  try {
    if (what === 'seed') for (let n = 0; n < SEED_STREAMS; n++) await side.appendSeedStream(seededStream(n));
    else console.log(JSON.stringify(await round(side, Number(what))));
  } finally {
    await side.close();
  }
}

