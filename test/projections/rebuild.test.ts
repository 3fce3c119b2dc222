import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatch } from '../../projections/runner.ts';
import { REBUILD_BATCH, RebuildAlreadyRunningError, rebuildProjection } from '../../projections/rebuild.ts';
import type { Projection } from '../../projections/projection.ts';
import { tenantsProjection } from '../../projections/tenants.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { START, comparePositions, type EventStore, type Position } from '../../src/event-store/port.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

const EMPLOYERS = 3 * REBUILD_BATCH + 500;

const meta = (tenantId: string) => ({
  tenantId,
  actor: { type: 'system' as const, id: 'test' },
  correlationId: 'c',
  causationId: null,
  schemaVersion: 1,
  occurredAt: new Date().toISOString(),
});

/** `count` employers, a thousand new streams per append. */
async function appendEmployers(store: EventStore, count: number): Promise<Position> {
  let position = START;
  for (let first = 0; first < count; first += 1000) {
    const ids = Array.from({ length: Math.min(1000, count - first) }, (_, i) => `emp-${first + i}`);
    ({ position } = await store.appendToStreams(
      ids.map((employerId) => ({
        streamName: `tenant-${employerId}.employer-${employerId}`,
        events: [{ type: 'EmployerCreated', data: { employerId, name: `Employer ${employerId}`, createdAt: new Date().toISOString() } }],
        expectedRevision: 'no_stream' as const,
        metadata: meta(employerId),
      })),
    ));
  }
  return position;
}

describe('projection rebuild', () => {
  let database: TestDatabase;
  let store: EventStore;
  const employers = () => database.db.slonik.any(sql.type(z.object({ id: z.string(), name: z.string(), created_at: z.string() }))`
    SELECT id, name, created_at FROM employers ORDER BY id`);
  const savedRebuild = () => database.db.slonik.maybeOne(sql.type(z.object({ position_prepare: z.string(), events_applied: z.string() }))`
    SELECT position_prepare::text, events_applied::text FROM projection_rebuilds WHERE projection = 'tenants'`);

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications);
    const last = await appendEmployers(store, EMPLOYERS);
    // The live model, applied as the runner would.
    let after = START;
    while (comparePositions(after, last) < 0) {
      const batch = await store.readAll({ after, maxCount: 1000 });
      if (batch.length > 0) {
        await applyBatch(database.db.slonik, tenantsProjection, batch);
        after = batch[batch.length - 1]!.position;
      }
    }
  });
  afterAll(async () => database?.cleanup());

  it('resumes a rebuild that failed after some batches from its checkpoint, ending where a fresh rebuild ends', async () => {
    const live = await employers();
    expect(live).toHaveLength(EMPLOYERS);
    let batches = 0;
    const failingOnThirdBatch: Projection = {
      ...tenantsProjection,
      async apply(tx, events) {
        if (++batches === 3) throw new Error('injected failure in the third batch');
        await tenantsProjection.apply(tx, events);
      },
    };
    await expect(rebuildProjection({ db: database.db, eventStore: store, projection: failingOnThirdBatch })).rejects.toThrow(/injected failure/);
    // Two batches are kept, with their checkpoint; the live model is untouched.
    expect(await savedRebuild()).toMatchObject({ events_applied: String(2 * REBUILD_BATCH) });
    expect(await employers()).toEqual(live);

    let firstProgress: number | null = null;
    const resumed = await rebuildProjection({
      db: database.db,
      eventStore: store,
      projection: tenantsProjection,
      onProgress: ({ applied }) => void (firstProgress ??= applied),
    });
    expect(resumed.resumedFrom).not.toBeNull();
    expect(resumed.resumedFrom!.prepare.toString()).toBe((await database.db.slonik.oneFirst(sql.type(z.object({ p: z.string() }))`
      SELECT global_position::text AS p FROM events ORDER BY transaction_id, global_position OFFSET ${2 * REBUILD_BATCH - 1} LIMIT 1`)));
    expect(firstProgress).toBe(3 * REBUILD_BATCH); // it went on with the third batch, not from the start
    expect(resumed.eventsApplied).toBe(EMPLOYERS);
    expect(await savedRebuild()).toBeNull();
    const afterResume = await employers();
    expect(afterResume).toEqual(live);

    const fresh = await rebuildProjection({ db: database.db, eventStore: store, projection: tenantsProjection, restart: true });
    expect(fresh.resumedFrom).toBeNull();
    expect(fresh.eventsApplied).toBe(EMPLOYERS);
    expect(await employers()).toEqual(afterResume);
  });

  it('starts afresh on --restart, discarding a stopped rebuild', async () => {
    let batches = 0;
    const failingOnSecondBatch: Projection = {
      ...tenantsProjection,
      async apply(tx, events) {
        if (++batches === 2) throw new Error('injected failure in the second batch');
        await tenantsProjection.apply(tx, events);
      },
    };
    await expect(rebuildProjection({ db: database.db, eventStore: store, projection: failingOnSecondBatch })).rejects.toThrow(/injected failure/);
    expect(await savedRebuild()).toMatchObject({ events_applied: String(REBUILD_BATCH) });
    let firstProgress: number | null = null;
    const fresh = await rebuildProjection({
      db: database.db,
      eventStore: store,
      projection: tenantsProjection,
      restart: true,
      onProgress: ({ applied }) => void (firstProgress ??= applied),
    });
    expect(fresh.resumedFrom).toBeNull();
    expect(firstProgress).toBe(REBUILD_BATCH);
    expect(fresh.eventsApplied).toBe(EMPLOYERS);
    expect(await employers()).toHaveLength(EMPLOYERS);
  });

  it('refuses a second rebuild of a projection while one runs, and allows it once that one is done', async () => {
    let entered!: () => void;
    const firstBatchEntered = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: Projection = {
      ...tenantsProjection,
      async apply(tx, events) {
        entered();
        await released;
        await tenantsProjection.apply(tx, events);
      },
    };
    const first = rebuildProjection({ db: database.db, eventStore: store, projection: held, restart: true });
    await firstBatchEntered;

    const second = rebuildProjection({ db: database.db, eventStore: store, projection: tenantsProjection });
    await expect(second).rejects.toBeInstanceOf(RebuildAlreadyRunningError);
    await expect(second).rejects.toThrow(/A rebuild of tenants is already running \(by .+ pid \d+, started .+\); wait for it to finish/);
    // The refused one changed nothing: the first goes on from where it was.
    expect(await savedRebuild()).toMatchObject({ events_applied: '0' });

    release();
    expect((await first).eventsApplied).toBe(EMPLOYERS);
    expect((await rebuildProjection({ db: database.db, eventStore: store, projection: tenantsProjection })).eventsApplied).toBe(EMPLOYERS);
    expect(await employers()).toHaveLength(EMPLOYERS);
  });
});
