import { createSecretKey, randomBytes } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatch } from '../../projections/runner.ts';
import { RebuildAlreadyRunningError, rebuildProjection } from '../../projections/rebuild.ts';
import { tenantsProjection as keyedTenantsProjection } from '../../projections/tenants/projection.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { START, comparePositions, type EventStore, type Position } from '../../src/event-store/port.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { serviceEventRegistry } from '../support/event-registry.ts';

/** Employers only here: the key opens no user's data. */
const tenantsProjection = keyedTenantsProjection(createSecretKey(randomBytes(32)));

const EMPLOYERS = 6_000;

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

/**
 * A failure that says nothing about the events (the server ended the connection): it stops the
 * rebuild. One that says something about an event would park that event instead.
 */
const lostConnection = (message: string) => Object.assign(new Error(message), { code: '57P01' });

describe('projection rebuild', () => {
  let database: TestDatabase;
  let store: EventStore;
  const employers = () => database.db.slonik.any(sql.type(z.object({ id: z.string(), name: z.string(), created_at: z.string() }))`
    SELECT id, name, created_at FROM employers ORDER BY id`);
  const savedRebuild = () => database.db.slonik.maybeOne(sql.type(z.object({ commit: z.bigint(), prepare: z.bigint(), applied: z.number() }))`
    SELECT position_commit AS commit, position_prepare AS prepare, events_applied::int AS applied FROM projection_rebuilds WHERE projection = 'tenants'`);
  /** The tenants projection, counting the events it is given. */
  const counting = (counter: { events: number }): typeof tenantsProjection => ({
    ...tenantsProjection,
    async apply(tx, events) {
      counter.events += events.length;
      await tenantsProjection.apply(tx, events);
    },
  });

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications, serviceEventRegistry);
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
    const failingOnThirdBatch: typeof tenantsProjection = {
      ...tenantsProjection,
      async apply(tx, events) {
        if (++batches === 3) throw lostConnection('injected failure in the third batch');
        await tenantsProjection.apply(tx, events);
      },
    };
    await expect(rebuildProjection({ db: database.db, eventStore: store, projection: failingOnThirdBatch })).rejects.toThrow(/injected failure/);
    // Two batches are kept, with their checkpoint; the live model is untouched.
    const saved = (await savedRebuild())!;
    expect(saved.applied).toBeGreaterThan(0);
    expect(saved.applied).toBeLessThan(EMPLOYERS);
    expect(await employers()).toEqual(live);

    const resumedRun = { events: 0 };
    const resumed = await rebuildProjection({ db: database.db, eventStore: store, projection: counting(resumedRun) });
    expect(resumed.resumedFrom).toEqual({ commit: saved.commit, prepare: saved.prepare });
    expect(resumedRun.events).toBe(EMPLOYERS - saved.applied); // it went on from its checkpoint, not from the start
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
    const failingOnSecondBatch: typeof tenantsProjection = {
      ...tenantsProjection,
      async apply(tx, events) {
        if (++batches === 2) throw lostConnection('injected failure in the second batch');
        await tenantsProjection.apply(tx, events);
      },
    };
    await expect(rebuildProjection({ db: database.db, eventStore: store, projection: failingOnSecondBatch })).rejects.toThrow(/injected failure/);
    expect((await savedRebuild())!.applied).toBeGreaterThan(0);
    const freshRun = { events: 0 };
    const fresh = await rebuildProjection({ db: database.db, eventStore: store, projection: counting(freshRun), restart: true });
    expect(fresh.resumedFrom).toBeNull();
    expect(freshRun.events).toBe(EMPLOYERS);
    expect(fresh.eventsApplied).toBe(EMPLOYERS);
    expect(await employers()).toHaveLength(EMPLOYERS);
  });

  it('refuses a second rebuild of a projection while one runs, and allows it once that one is done', async () => {
    let entered!: () => void;
    const firstBatchEntered = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: typeof tenantsProjection = {
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
    expect(await savedRebuild()).toMatchObject({ applied: 0 });

    release();
    expect((await first).eventsApplied).toBe(EMPLOYERS);
    expect((await rebuildProjection({ db: database.db, eventStore: store, projection: tenantsProjection })).eventsApplied).toBe(EMPLOYERS);
    expect(await employers()).toHaveLength(EMPLOYERS);
  });
});
