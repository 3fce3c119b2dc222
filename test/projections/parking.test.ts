// Parking: an event a projection cannot apply is set aside with its error, in the transaction that
// moves the checkpoint past its batch, and the later events of its stream wait behind it until a retry.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listParked, rebuildParkingName } from '../../projections/parking.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { REBUILD_BATCH, rebuildProjection } from '../../projections/rebuild.ts';
import { applyBatch, applyBatchParkingFailures, readCheckpoint, retryParkedEvents } from '../../projections/runner.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { START, tenantStream, type EventStore, type RecordedEvent } from '../../src/event-store/port.ts';
import { createEventRegistry, eventSchema } from '../../src/event-store/schemas.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

const POISON = 13;

/** The made-up events these tests append: a number each. */
const probeEvents = createEventRegistry(
  ['ProbeParked', 'ProbeDeadlocked', 'ProbeRebuilt', 'ProbeResumed'].map((type) => eventSchema(type, z.object({ n: z.number() }))),
);

describe('parking events a projection cannot apply', () => {
  let database: TestDatabase;
  let store: EventStore;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications, probeEvents);
  });
  afterAll(async () => database?.cleanup());

  /**
   * A projection writing one row per event into a table of its own whose CHECK constraint refuses
   * n = 13: a real failing statement, which `fix()` removes.
   */
  const probe = async (name: string, eventType: string) => {
    const table = name.replaceAll('-', '_');
    await database.db.pg.query(`CREATE TABLE ${table} (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event_id text NOT NULL, stream_name text NOT NULL,
      n integer NOT NULL CONSTRAINT ${table}_refuses_poison CHECK (n <> ${POISON}))`);
    const projection: Projection = {
      name,
      tables: [table],
      eventTypes: [eventType],
      async apply(tx, events) {
        const rows = events.map((event) => ({ event_id: event.eventId, stream_name: event.streamName, n: event.data.n }));
        await tx.query(sql.unsafe`
          INSERT INTO ${sql.identifier([table])} (event_id, stream_name, n)
          SELECT event_id, stream_name, n FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(event_id text, stream_name text, n integer)`);
      },
    };
    const rows = async () =>
      database.db.slonik.any(sql.type(z.object({ event_id: z.string(), stream_name: z.string(), n: z.number() }))`
        SELECT event_id, stream_name, n FROM ${sql.identifier([table])} ORDER BY seq`);
    const fix = () => database.db.pg.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_refuses_poison`);
    return { projection, rows, fix };
  };

  /** A fresh tenant whose appends of `eventType` carry a number each; `events()` reads them back in global order. */
  const tenant = (eventType: string) => {
    const tenantId = randomUUID();
    return {
      stream: (id: string) => tenantStream(tenantId, 'probe', id),
      append: (id: string, ...ns: number[]) =>
        store.appendToStream(tenantStream(tenantId, 'probe', id), ns.map((n) => ({ type: eventType, data: { n } })), {
          expectedRevision: 'any',
          metadata: { tenantId, actor: { type: 'system', id: 'test' }, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
        }),
      // Waits (bounded) while another database's transaction on the shared server hides recent commits.
      events: async (count: number, after = START): Promise<RecordedEvent[]> => {
        for (let attempt = 0; attempt < 500; attempt++) {
          const events = await store.readAll({ tenantId, after, maxCount: count });
          if (events.length >= count) return events;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        throw new Error(`expected ${count} visible events`);
      },
    };
  };

  it('parks the event a batch cannot apply, applies every other event of the batch once, and keeps its stream in order until a retry', async () => {
    const { projection, rows, fix } = await probe('probe-parking', 'ProbeParked');
    const acme = tenant('ProbeParked');
    await acme.append('a', 1);
    await acme.append('b', POISON);
    await acme.append('b', 2);
    await acme.append('c', 3);
    const batch = await acme.events(4);
    const [, poisoned, behindIt] = batch;

    await expect(applyBatch(database.db.slonik, projection, batch)).rejects.toThrow();
    const { applied, parked } = await applyBatchParkingFailures(database.db.slonik, projection, batch, { failedAttempts: 3 });
    expect(applied).toBe(2);
    expect(parked.map(({ event }) => event.eventId).sort()).toEqual([poisoned!.eventId, behindIt!.eventId].sort());
    expect((await rows()).map((row) => row.n)).toEqual([1, 3]);
    expect(await readCheckpoint(database.db.slonik, projection.name)).toEqual(batch[3]!.position);

    const stored = await listParked(database.db.slonik, { projection: projection.name, limit: 10 });
    expect(stored).toMatchObject([
      { event_id: poisoned!.eventId, event_type: 'ProbeParked', tenant_id: poisoned!.metadata.tenantId, stream_name: acme.stream('b'), attempts: 4 },
      { event_id: behindIt!.eventId, attempts: 0, error: expect.stringContaining(`waiting behind parked event ${poisoned!.eventId}`) },
    ]);
    expect(stored[0]!.error).toMatch(/violates check constraint "probe_parking_refuses_poison" \[23514\]/);
    expect(stored[0]!.position_prepare).toBe(poisoned!.position.prepare.toString());

    // Offered again (a second runner, a retry of the subscription): nothing is applied twice.
    expect(await applyBatch(database.db.slonik, projection, batch)).toBe(0);
    expect((await rows()).map((row) => row.n)).toEqual([1, 3]);

    // Later: the parked stream's next event waits behind; another stream's goes on.
    await acme.append('b', 4);
    await acme.append('a', 5);
    const later = await acme.events(2, batch[3]!.position);
    expect(await applyBatch(database.db.slonik, projection, later)).toBe(1);
    expect((await rows()).map((row) => row.n)).toEqual([1, 3, 5]);

    // A retry before the fix changes nothing but the attempts.
    expect(await retryParkedEvents({ pool: database.db.slonik, eventStore: store, projection })).toEqual({ applied: 0, stillParked: 3 });
    expect((await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).map((row) => row.attempts)).toEqual([5, 0, 0]);

    await fix();
    expect(await retryParkedEvents({ pool: database.db.slonik, eventStore: store, projection })).toEqual({ applied: 3, stillParked: 0 });
    expect(await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).toEqual([]);
    // Stream b in its own order, each event once.
    expect((await rows()).filter((row) => row.stream_name === acme.stream('b')).map((row) => row.n)).toEqual([POISON, 2, 4]);
    expect((await rows()).map((row) => row.event_id).sort()).toEqual([...batch, ...later].map((event) => event.eventId).sort());
  });

  it('parks nothing for an error that says nothing about the event (a deadlock), and moves no checkpoint', async () => {
    const { projection } = await probe('probe-deadlock', 'ProbeDeadlocked');
    const deadlocking: Projection = {
      ...projection,
      async apply() {
        throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      },
    };
    const acme = tenant('ProbeDeadlocked');
    await acme.append('a', 1, 2);
    const batch = await acme.events(2);
    await expect(applyBatchParkingFailures(database.db.slonik, deadlocking, batch, { failedAttempts: 3 })).rejects.toThrow(/deadlock/);
    expect(await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).toEqual([]);
    expect(await readCheckpoint(database.db.slonik, projection.name)).toEqual(START);
  });

  it('parks in a rebuild instead of aborting it, and the rebuilt verdict replaces what was parked before', async () => {
    const { projection, rows, fix } = await probe('probe-rebuild', 'ProbeRebuilt');
    const acme = tenant('ProbeRebuilt');
    await acme.append('a', 1);
    await acme.append('b', POISON);
    await acme.append('c', 2);
    const batch = await acme.events(3);
    await applyBatchParkingFailures(database.db.slonik, projection, batch, { failedAttempts: 3 });
    expect((await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).map((row) => row.event_id)).toEqual([batch[1]!.eventId]);

    // Still poisoned: the rebuild parks the event again and completes.
    const rebuilt = await rebuildProjection({ db: database.db, eventStore: store, projection });
    expect(rebuilt).toMatchObject({ eventsApplied: 2, parked: 1 });
    expect((await rows()).map((row) => row.n)).toEqual([1, 2]);
    expect(await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).toMatchObject([{ event_id: batch[1]!.eventId, attempts: 1 }]);

    // Fixed (the rebuild's tables carry the constraint under its own name): a rebuild applies it, and nothing stays parked.
    await fix();
    expect(await rebuildProjection({ db: database.db, eventStore: store, projection })).toMatchObject({ eventsApplied: 3, parked: 0 });
    expect((await rows()).map((row) => row.n)).toEqual([1, POISON, 2]);
    expect(await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).toEqual([]);
  });

  it('a rebuild that stopped resumes with what it had parked: the later events of a parked stream still wait behind it', async () => {
    const { projection, rows } = await probe('probe-resume', 'ProbeResumed');
    const acme = tenant('ProbeResumed');
    // The poisoned event in the first batch; the next event of its stream in the second, after 1,000 others.
    await acme.append('b', POISON);
    await acme.append('a', ...Array.from({ length: REBUILD_BATCH }, (_, i) => 100 + i));
    await acme.append('b', 2);
    const events = await acme.events(REBUILD_BATCH + 2);
    let failed = false;
    const stoppingInSecondBatch: Projection = {
      ...projection,
      async apply(tx, batch) {
        // The server ends the connection once, in the second batch (the one with stream a's last event): the rebuild stops.
        if (!failed && batch.some((event) => event.data.n === 100 + REBUILD_BATCH - 1)) {
          failed = true;
          throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
        }
        await projection.apply(tx, batch);
      },
    };
    await expect(rebuildProjection({ db: database.db, eventStore: store, projection: stoppingInSecondBatch })).rejects.toThrow(/terminating/);
    expect((await listParked(database.db.slonik, { projection: rebuildParkingName(projection.name), limit: 10 })).map((row) => row.event_id)).toEqual([
      events[0]!.eventId,
    ]);

    const resumed = await rebuildProjection({ db: database.db, eventStore: store, projection });
    expect(resumed.resumedFrom).not.toBeNull();
    expect(resumed).toMatchObject({ eventsApplied: REBUILD_BATCH, parked: 2 });
    expect((await rows()).map((row) => row.n)).toEqual(Array.from({ length: REBUILD_BATCH }, (_, i) => 100 + i));
    expect(await listParked(database.db.slonik, { projection: projection.name, limit: 10 })).toMatchObject([
      { event_id: events[0]!.eventId, attempts: 1 },
      { event_id: events[REBUILD_BATCH + 1]!.eventId, attempts: 0, error: expect.stringContaining(`waiting behind parked event ${events[0]!.eventId}`) },
    ]);
    expect(await listParked(database.db.slonik, { projection: rebuildParkingName(projection.name), limit: 10 })).toEqual([]);
  }, 120_000); // a thousand events applied one by one (the batch with the poisoned one), on a loaded machine
});
