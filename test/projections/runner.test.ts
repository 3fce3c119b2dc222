import { createSecretKey, randomBytes } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyBatch, createProjectionWaiter, readCheckpoint } from '../../projections/runner.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { tenantsProjection as keyedTenantsProjection } from '../../projections/tenants/projection.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { START, type EventStore } from '../../src/event-store/port.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { serviceEventRegistry } from '../support/event-registry.ts';

/** Employers only here: the key opens no user's data. */
const tenantsProjection = keyedTenantsProjection(createSecretKey(randomBytes(32)));

const meta = (tenantId: string) => ({
  tenantId,
  actor: { type: 'system' as const, id: 'test' },
  correlationId: 'c',
  causationId: null,
  schemaVersion: 1,
  occurredAt: new Date().toISOString(),
});

async function appendEmployers(store: EventStore, count: number, prefix: string) {
  for (let i = 0; i < count; i++) {
    const employerId = `${prefix}${i}`;
    await store.appendToStream(`tenant-${employerId}.employer-${employerId}`, [{ type: 'EmployerCreated', data: { employerId, name: `Employer ${i}`, createdAt: new Date().toISOString() } }], {
      expectedRevision: 'no_stream',
      metadata: meta(employerId),
    });
  }
}

/** Every event appended so far; waits (bounded) while other databases' transactions hide recent commits. */
async function readEverything(store: EventStore, expected: number) {
  for (let attempt = 0; attempt < 500; attempt++) {
    const events = await store.readAll({ after: START, maxCount: 100_000 });
    if (events.length >= expected) return events;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`expected ${expected} visible events`);
}

describe('projection runner', () => {
  let database: TestDatabase;
  let store: EventStore;
  const countEmployers = () => database.db.slonik.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM employers`);

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications, serviceEventRegistry);
  });
  afterAll(async () => database?.cleanup());

  it('resumes a batch that crashed midway without losing or duplicating an event', async () => {
    await appendEmployers(store, 20, 'crash-');
    const batch = await readEverything(store, 20);
    let applied = 0;
    const crashing: typeof tenantsProjection = {
      ...tenantsProjection,
      async apply(tx, events) {
        // Write half the batch, then die as a process would mid-way.
        await tenantsProjection.apply(tx, events.slice(0, 10));
        applied += 10;
        throw new Error('crash in the middle of a batch');
      },
    };
    await expect(applyBatch(database.db.slonik, crashing, batch)).rejects.toThrow(/crash/);
    expect(applied).toBe(10);
    expect(await countEmployers()).toBe(0);
    expect(await readCheckpoint(database.db.slonik, 'tenants')).toEqual(START);

    expect(await applyBatch(database.db.slonik, tenantsProjection, batch)).toBe(20);
    expect(await countEmployers()).toBe(20);
    // Offered the same batch again (a second runner, a retry): nothing is applied twice.
    expect(await applyBatch(database.db.slonik, tenantsProjection, batch)).toBe(0);
    expect(await countEmployers()).toBe(20);
    expect(await readCheckpoint(database.db.slonik, 'tenants')).toEqual(batch[batch.length - 1]!.position);
  });

  it('rebuilds into fresh tables while readers always see a complete model', async () => {
    await appendEmployers(store, 300, 'rebuild-');
    await applyBatch(database.db.slonik, tenantsProjection, await readEverything(store, 320));
    const total = await countEmployers();
    expect(total).toBe(320);

    const observed: number[] = [];
    let rebuilding = true;
    const readers = Array.from({ length: 3 }, async () => {
      while (rebuilding) observed.push(await countEmployers());
    });
    const result = await rebuildProjection({ db: database.db, eventStore: store, projection: tenantsProjection });
    rebuilding = false;
    await Promise.all(readers);

    expect(result.eventsApplied).toBe(320);
    expect(observed.length).toBeGreaterThan(0);
    expect(observed.every((count) => count === total)).toBe(true);
    expect(await countEmployers()).toBe(total);
    // The swapped-in tables carry the migrations' own index and constraint names.
    const indexes = await database.db.slonik.anyFirst(sql.type(z.object({ indexname: z.string() }))`
      SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename IN ('employers', 'users')`);
    expect(indexes).toEqual(expect.arrayContaining(['employers_pkey', 'users_pkey', 'users_by_email', 'users_by_employer', 'users_by_employer_user_name']));
    // The model keeps following new events after the swap.
    await appendEmployers(store, 1, 'after-');
    expect(await applyBatch(database.db.slonik, tenantsProjection, await readEverything(store, 321))).toBe(1);
    expect(await countEmployers()).toBe(total + 1);
  });

  it('lets a waiter see a checkpoint that moved without any announcement, by reading the table', async () => {
    const waitFor = createProjectionWaiter({ pool: database.db.slonik, notifications: database.notifications, names: ['silent'], timeoutMs: 10_000 });
    await database.db.slonik.query(sql.unsafe`INSERT INTO projection_checkpoints (name) VALUES ('silent')`);
    expect(await waitFor(START)).toBe(true); // from now on the waiter knows 'silent' and reads it only when polling
    const target = { commit: 5n, prepare: 7n };
    const waiting = waitFor(target);
    // Moved by hand, with no NOTIFY and nothing published: only the waiter's own reads can find it.
    await database.db.slonik.query(sql.unsafe`UPDATE projection_checkpoints SET position_commit = 5, position_prepare = 7 WHERE name = 'silent'`);
    expect(await waiting).toBe(true);
  });
});
