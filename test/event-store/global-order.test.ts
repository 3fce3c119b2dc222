// The Postgres store's global order under concurrent writers: a reader following the global position
// never skips an event whose transaction commits after one with a higher position.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendStatement, createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { START, comparePositions, type EventMetadata, type EventStore, type Position } from '../../src/event-store/port.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { storeTestEventRegistry } from '../support/event-registry.ts';

const metadata = (tenantId: string): EventMetadata => ({
  tenantId,
  actor: { type: 'system', id: 'test' },
  correlationId: 'race',
  causationId: null,
  schemaVersion: 1,
  occurredAt: new Date().toISOString(),
});

describe('Postgres event store: global order', () => {
  let database: TestDatabase;
  let store: EventStore;
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications, storeTestEventRegistry);
  });
  afterAll(async () => database?.cleanup());

  it('never skips an event committed out of order (60 concurrent appenders, 10 holding their transaction open)', async () => {
    const tenantId = 'race-tenant';
    const seen: string[] = [];
    let position: Position = START;
    let reading = true;
    const follow = async () => {
      for (;;) {
        const batch = await store.readAll({ after: position, tenantId, maxCount: 7 });
        for (const event of batch) {
          expect(comparePositions(event.position, position)).toBeGreaterThan(0);
          seen.push(String(event.data.n));
        }
        if (batch.length > 0) position = batch[batch.length - 1]!.position;
        else if (!reading) return;
        else await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const reader = follow();

    // Ten writers take their positions first and hold their transactions open...
    const held = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const client = new pg.Client({ connectionString: database.connectionUri });
        await client.connect();
        await client.query('BEGIN');
        await client.query(
          appendStatement([
            { streamName: `tenant-${tenantId}.held-${i}`, events: [{ type: 'Raced', data: { n: `held-${i}` } }], expectedRevision: 'no_stream', metadata: metadata(tenantId) },
          ], storeTestEventRegistry),
        );
        return client;
      }),
    );
    // ...while fifty others append and commit with higher positions.
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        store.appendToStream(`tenant-${tenantId}.quick-${i}`, [{ type: 'Raced', data: { n: `quick-${i}` } }], { expectedRevision: 'no_stream', metadata: metadata(tenantId) }),
      ),
    );
    // While the old transactions are open the reader must not move past them.
    const visibleWhileHeld = await store.readAll({ after: START, tenantId, maxCount: 1000 });
    expect(visibleWhileHeld).toHaveLength(0);

    for (const client of held.reverse()) {
      await client.query('COMMIT');
      await client.end();
    }
    // Wait (bounded) until the reader has everything, then stop it.
    const expected = 60;
    for (let i = 0; i < 2000 && seen.length < expected; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    reading = false;
    await reader;

    expect(seen).toHaveLength(expected);
    expect(new Set(seen).size).toBe(expected);
    expect(seen.filter((n) => n.startsWith('held-'))).toHaveLength(10);
  });

  it('refuses to update, delete or truncate events', async () => {
    await store.appendToStream('tenant-x.thing-1', [{ type: 'Happened', data: {} }], { expectedRevision: 'no_stream', metadata: metadata('x') });
    const client = new pg.Client({ connectionString: database.connectionUri });
    await client.connect();
    try {
      await expect(client.query(`UPDATE events SET type = 'Changed'`)).rejects.toThrow(/append-only/);
      await expect(client.query('DELETE FROM events')).rejects.toThrow(/append-only/);
      await expect(client.query('TRUNCATE events')).rejects.toThrow(/append-only/);
      expect((await client.query(`SELECT count(*)::int AS n FROM events WHERE type = 'Happened'`)).rows[0].n).toBe(1);
    } finally {
      await client.end();
    }
  });

  it('lets exactly one of many concurrent appends at the same expected revision win', async () => {
    const stream = 'tenant-x.contended-1';
    await store.appendToStream(stream, [{ type: 'Opened', data: {} }], { expectedRevision: 'no_stream', metadata: metadata('x') });
    const results = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => store.appendToStream(stream, [{ type: 'Claimed', data: { i } }], { expectedRevision: 0n, metadata: metadata('x') })),
    );
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((result) => result.status === 'rejected' && result.reason.name === 'WrongExpectedRevisionError')).toHaveLength(29);
    expect(await store.readStream(stream)).toHaveLength(2);
  });
});
