// Set-based batches: a projection applying a whole batch in a few statements writes the same rows as
// applying its events one at a time, and a bad event in such a batch is still parked alone.
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listParked } from '../../projections/parking.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { applyBatch } from '../../projections/runner.ts';
import { tenantsProjection } from '../../projections/tenants/projection.ts';
import { ROLES } from '../../src/auth/principal.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { START, tenantStream, type EventStore, type NewEvent, type Position, type RecordedEvent } from '../../src/event-store/port.ts';
import { createEventRegistry } from '../../src/event-store/schemas.ts';
import { tenantEvents } from '../../src/tenants/events.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

/**
 * A burst of changes of one type to a tenant's users, one event each, in order: consecutive events of
 * one type, some to the same user (what a projection folds into one row). The first thing that
 * happens to a user registers it.
 */
const user = fc.integer({ min: 0, max: 2 });
const burst = <Change extends object>(type: string, change: fc.Arbitrary<Change>) =>
  fc.array(fc.tuple(user, change), { minLength: 1, maxLength: 4 }).map((changes) => ({ type, changes }));
const userChanges = fc.oneof(
  burst('UserDeactivated', fc.record({ scimDeleted: fc.boolean() })),
  burst('UserReactivated', fc.constant({})),
  burst('UserRoleChanged', fc.record({ role: fc.constantFrom(...ROLES) })),
  burst('UserApiKeyCreated', fc.constant({})),
);

describe('set-based batches', () => {
  let database: TestDatabase;
  let store: EventStore;
  const projection = tenantsProjection(createSecretKey(randomBytes(32)));
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createPostgresEventStore(database.db.eventStore, database.notifications, createEventRegistry(tenantEvents));
  });
  afterAll(async () => database?.cleanup());

  const registration = (tenantId: string, userId: string, email: string): NewEvent => ({
    type: 'UserRegistered',
    data: {
      userId, employerId: tenantId, role: 'PATIENT', active: true, source: 'scim',
      personal: { clear: { email, userName: email, givenName: 'Given', familyName: 'Family', displayName: null, externalId: null } },
    },
  });
  const append = (tenantId: string, stream: string, event: NewEvent) =>
    store.appendToStream(tenantStream(tenantId, 'user', stream), [event], {
      expectedRevision: 'any',
      metadata: { tenantId, actor: { type: 'system', id: 'test' }, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
    });
  /** The tenant's events after `after`, in global order (waiting, bounded, while another test's transaction hides recent commits). */
  const eventsOf = async (tenantId: string, count: number, after: Position = START): Promise<RecordedEvent[]> => {
    for (let attempt = 0; attempt < 500; attempt++) {
      const events = await store.readAll({ tenantId, after, maxCount: count });
      if (events.length >= count) return events;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`expected ${count} visible events`);
  };
  const usersOf = async (tenantId: string) =>
    database.db.pg.query(
      `SELECT id, employer_id, email, role, active, scim_deleted, version, created_at, updated_at, emails, work_email, scim_attributes
       FROM users WHERE employer_id = $1 ORDER BY id`,
      [tenantId],
    ).then((result) => result.rows);

  it('a rebuild, a few statements per batch, writes the rows the live runner wrote applying one event per batch', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(userChanges, { minLength: 1, maxLength: 8 }), async (bursts) => {
        const tenantId = randomUUID();
        const registered = new Set<number>();
        let appended = 0;
        const userIdOf = (n: number) => `${tenantId}-u${n}`;
        // Registrations first, so that each burst's events stay consecutive.
        for (const n of new Set(bursts.flatMap(({ changes }) => changes.map(([n]) => n)))) {
          registered.add(n);
          await append(tenantId, userIdOf(n), registration(tenantId, userIdOf(n), `u${n}-${tenantId}@example.test`));
          appended += 1;
        }
        for (const { type, changes } of bursts) {
          for (const [n, change] of changes) {
            const userId = userIdOf(n);
            await append(tenantId, userId, { type, data: type === 'UserApiKeyCreated' ? { userId, keyId: randomUUID() } : { userId, ...change } });
            appended += 1;
          }
        }
        for (const event of await eventsOf(tenantId, appended)) await applyBatch(database.db.slonik, projection, [event]);
        const live = await usersOf(tenantId);
        expect(live).toHaveLength(registered.size);

        await rebuildProjection({ db: database.db, eventStore: store, projection });
        expect(await usersOf(tenantId)).toEqual(live);
      }),
      { numRuns: 10 },
    );
  }, 120_000);

  it('parks alone the one registration of a rebuild batch that the users table refuses, and applies the rest of the batch', async () => {
    const tenantId = randomUUID();
    const email = `taken-${tenantId}@example.test`;
    await append(tenantId, 'a', registration(tenantId, `${tenantId}-a`, email));
    await append(tenantId, 'b', registration(tenantId, `${tenantId}-b`, email)); // the same address: users_by_email refuses it
    await append(tenantId, 'c', registration(tenantId, `${tenantId}-c`, `c-${tenantId}@example.test`));
    const [, refused] = await eventsOf(tenantId, 3);

    const rebuilt = await rebuildProjection({ db: database.db, eventStore: store, projection });
    expect(rebuilt.parked).toBe(1);
    expect((await usersOf(tenantId)).map((row) => row.id)).toEqual([`${tenantId}-a`, `${tenantId}-c`]);
    expect(await listParked(database.db.slonik, { projection: 'tenants', limit: 10 })).toMatchObject([
      { event_id: refused!.eventId, error: expect.stringContaining('users_by_email') },
    ]);
  }, 60_000);
});
