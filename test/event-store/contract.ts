// The behaviour every event store adapter must have, run against each adapter by its own test file
// (postgres-contract.test.ts, kurrentdb.test.ts). Every case writes to streams of fresh random tenants,
// so cases never see each other's events even when the store is shared.
import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  START,
  WrongExpectedRevisionError,
  comparePositions,
  systemStream,
  tenantStream,
  type AppendMetadata,
  type EventStore,
  type ReadAllOptions,
  type RecordedEvent,
} from '../../src/event-store/port.ts';
import { createEventRegistry, eventSchema, InvalidEventError, UnreadableEventError, type EventRegistry } from '../../src/event-store/schemas.ts';
import { storeTestEventRegistry, storeTestEvents } from '../support/event-registry.ts';

/** Opens the backend once; `store` makes an adapter on it that knows the given event schemas. */
export type EventStoreFactory = () => Promise<{ store(registry: EventRegistry): EventStore; cleanup(): Promise<void> }>;

const metadataFor = (tenantId: string, overrides: Partial<AppendMetadata> = {}): AppendMetadata => ({
  tenantId,
  actor: { type: 'system', id: 'contract-test' },
  correlationId: randomUUID(),
  causationId: null,
  occurredAt: new Date().toISOString(),
  ...overrides,
});

/** A later release's schemas: one more event type, and ThingNamed at version 2 (a `title` in place of `name`). */
const newerRelease = createEventRegistry([
  ...storeTestEvents.filter((schema) => schema.type !== 'ThingNamed'),
  eventSchema('ThingArchived', z.object({ reason: z.string() })),
  eventSchema('ThingNamed', z.object({ title: z.string(), nested: z.object({ list: z.array(z.unknown()), flag: z.boolean() }) }), {
    version: 2,
    upcasters: { 1: ({ name, ...rest }) => ({ title: name, ...rest }) },
  }),
]);

const numbers = (events: RecordedEvent[]) => events.map((event) => event.data.n);

export function eventStoreContract(name: string, factory: EventStoreFactory): void {
  describe(`${name} event store contract`, () => {
    let store: EventStore;
    /** The same backend as written and read by a later release of the service. */
    let newerStore: EventStore;
    let cleanup = async () => {};
    // Generous: the factory may have to pull and start a container.
    beforeAll(async () => {
      const backend = await factory();
      cleanup = backend.cleanup;
      store = backend.store(storeTestEventRegistry);
      newerStore = backend.store(newerRelease);
    }, 180_000);
    afterAll(async () => cleanup());

    /** A fresh tenant with a helper that appends numbered events to one of its streams. */
    const newTenant = () => {
      const tenantId = randomUUID();
      const stream = (id: string) => tenantStream(tenantId, 'thing', id);
      const append = (id: string, ns: number[], expectedRevision: bigint | 'no_stream' | 'any' = 'any') =>
        store.appendToStream(stream(id), ns.map((n) => ({ type: 'Counted', data: { n } })), {
          expectedRevision,
          metadata: metadataFor(tenantId),
        });
      return { tenantId, stream, append };
    };

    /**
     * readAll may lag a moment behind appends that have committed (Postgres reads only below the oldest
     * transaction still running anywhere on the server), so wait until `count` events are visible.
     */
    const readAllOnceVisible = async (options: ReadAllOptions, count: number) => {
      for (let attempt = 0; ; attempt++) {
        const events = await store.readAll(options);
        if (events.length >= count || attempt === 1000) return events;
        await pause(20);
      }
    };

    it('appends to a new stream with no_stream and reads it back', async () => {
      const tenant = newTenant();
      const result = await tenant.append('a', [1, 2], 'no_stream');
      expect(result.nextExpectedRevision).toBe(1n);
      const events = await store.readStream(tenant.stream('a'));
      expect(numbers(events)).toEqual([1, 2]);
      expect(events.map((event) => event.streamRevision)).toEqual([0n, 1n]);
    });

    it('refuses no_stream when the stream exists', async () => {
      const tenant = newTenant();
      await tenant.append('a', [1], 'no_stream');
      const failure = tenant.append('a', [2], 'no_stream');
      await expect(failure).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(failure).rejects.toMatchObject({ streamName: tenant.stream('a'), expected: 'no_stream' });
      expect(numbers(await store.readStream(tenant.stream('a')))).toEqual([1]);
    });

    it('appends at the exact current revision and refuses a stale or absent one', async () => {
      const tenant = newTenant();
      await tenant.append('a', [1], 'no_stream');
      expect((await tenant.append('a', [2, 3], 0n)).nextExpectedRevision).toBe(2n);
      await expect(tenant.append('a', [4], 0n)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(tenant.append('a', [4], 3n)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      await expect(tenant.append('absent', [1], 0n)).rejects.toBeInstanceOf(WrongExpectedRevisionError);
      expect(numbers(await store.readStream(tenant.stream('a')))).toEqual([1, 2, 3]);
      expect(await store.readStream(tenant.stream('absent'))).toEqual([]);
    });

    it("appends with 'any' to absent and existing streams", async () => {
      const tenant = newTenant();
      expect((await tenant.append('a', [1], 'any')).nextExpectedRevision).toBe(0n);
      expect((await tenant.append('a', [2], 'any')).nextExpectedRevision).toBe(1n);
      expect(numbers(await store.readStream(tenant.stream('a')))).toEqual([1, 2]);
    });

    it('refuses an append whose metadata names another tenant than the stream', async () => {
      const tenant = newTenant();
      const append = store.appendToStream(tenant.stream('a'), [{ type: 'Counted', data: { n: 1 } }], {
        expectedRevision: 'no_stream',
        metadata: metadataFor(randomUUID()),
      });
      await expect(append).rejects.toThrow(/does not belong to tenant/);
      expect(await store.readStream(tenant.stream('a'))).toEqual([]);
    });

    it('reads a stream in revision order, from a given revision', async () => {
      const tenant = newTenant();
      await tenant.append('a', [1, 2], 'no_stream');
      await tenant.append('b', [100], 'no_stream');
      await tenant.append('a', [3, 4], 1n);
      expect(numbers(await store.readStream(tenant.stream('a')))).toEqual([1, 2, 3, 4]);
      const fromTwo = await store.readStream(tenant.stream('a'), { fromRevision: 2n });
      expect(numbers(fromTwo)).toEqual([3, 4]);
      expect(fromTwo.map((event) => event.streamRevision)).toEqual([2n, 3n]);
      expect(await store.readStream(tenant.stream('a'), { fromRevision: 4n })).toEqual([]);
    });

    it('reads an absent stream as an empty array', async () => {
      expect(await store.readStream(newTenant().stream('never-written'))).toEqual([]);
    });

    it('reads all events in global order, strictly after a position, at most maxCount', async () => {
      const tenant = newTenant();
      await tenant.append('a', [1], 'no_stream');
      await tenant.append('b', [2, 3], 'no_stream');
      await tenant.append('a', [4], 0n);
      await tenant.append('c', [5], 'no_stream');

      const all = await readAllOnceVisible({ tenantId: tenant.tenantId }, 5);
      expect(numbers(all)).toEqual([1, 2, 3, 4, 5]);
      for (let i = 1; i < all.length; i++) expect(comparePositions(all[i - 1]!.position, all[i]!.position)).toBeLessThan(0);

      expect(numbers(await store.readAll({ tenantId: tenant.tenantId, after: all[1]!.position }))).toEqual([3, 4, 5]);
      expect(numbers(await store.readAll({ tenantId: tenant.tenantId, after: all[4]!.position }))).toEqual([]);
      expect(numbers(await store.readAll({ tenantId: tenant.tenantId, maxCount: 2 }))).toEqual([1, 2]);
      expect(numbers(await store.readAll({ tenantId: tenant.tenantId, after: all[0]!.position, maxCount: 2 }))).toEqual([2, 3]);
    });

    it("reports an append's position as the position of the event it wrote", async () => {
      const tenant = newTenant();
      const result = await tenant.append('a', [1], 'no_stream');
      const [event] = await readAllOnceVisible({ tenantId: tenant.tenantId }, 1);
      expect(event!.position).toEqual(result.position);
      expect(await store.readAll({ tenantId: tenant.tenantId, after: result.position })).toEqual([]);
    });

    it("filters reads of all events to one tenant's streams, and without a tenant returns every tenant's", async () => {
      const a = newTenant();
      const b = newTenant();
      const first = await a.append('x', [1], 'no_stream');
      await b.append('x', [2], 'no_stream');
      await a.append('y', [3], 'no_stream');
      await b.append('x', [4], 0n);

      const onlyA = await readAllOnceVisible({ tenantId: a.tenantId }, 2);
      expect(numbers(onlyA)).toEqual([1, 3]);
      expect(onlyA.every((event) => event.streamName.startsWith(`tenant-${a.tenantId}.`))).toBe(true);
      expect(numbers(await readAllOnceVisible({ tenantId: b.tenantId }, 2))).toEqual([2, 4]);
      // No other tenant has written since `first`, and system (`$`) events never appear.
      expect(numbers(await readAllOnceVisible({ after: first.position }, 3))).toEqual([2, 3, 4]);
    });

    it('round-trips event metadata, type, data and identity', async () => {
      const tenant = newTenant();
      const metadata = metadataFor(tenant.tenantId, {
        actor: { type: 'apiKey', id: 'key-123' },
        correlationId: randomUUID(),
        causationId: randomUUID(),
        occurredAt: '2025-01-02T03:04:05.678Z',
      });
      const data = { name: 'Ünïcødé ✓', nested: { list: [1, 'two', null], flag: true } };
      await store.appendToStream(tenant.stream('a'), [{ type: 'ThingNamed', data }], { expectedRevision: 'no_stream', metadata });

      const [fromStream] = await store.readStream(tenant.stream('a'));
      expect(fromStream).toMatchObject({ type: 'ThingNamed', data, metadata: { ...metadata, schemaVersion: 1 }, streamName: tenant.stream('a'), streamRevision: 0n });
      expect(fromStream!.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(new Date(fromStream!.recordedAt).toISOString()).toBe(fromStream!.recordedAt);
      const [fromAll] = await readAllOnceVisible({ tenantId: tenant.tenantId }, 1);
      expect(fromAll).toEqual(fromStream);
    });

    it('lets exactly one of 20 concurrent appends at the same expected revision win', async () => {
      const tenant = newTenant();
      await tenant.append('a', [0], 'no_stream');
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => tenant.append('a', [i + 1], 0n)));
      const won = results.filter((result) => result.status === 'fulfilled');
      const lost = results.filter((result) => result.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost.every((result) => result.reason instanceof WrongExpectedRevisionError)).toBe(true);
      expect(await store.readStream(tenant.stream('a'))).toHaveLength(2);
    });

    describe('operator figures', () => {
      it('reports the newest event as the head position', async () => {
        const tenant = newTenant();
        await tenant.append('a', [1], 'no_stream');
        const last = await tenant.append('b', [2, 3], 'no_stream');
        // Cases run one at a time, so nothing else has been written since.
        expect(await store.headPosition()).toEqual(last.position);
      });

      it('counts the events after a position, of some types, up to a limit', async () => {
        const tenant = newTenant();
        const before = await store.headPosition();
        // Cases run one at a time: after `before` there are only this case's events.
        const [counted, other] = ['Counted', 'Claimed'];
        await store.appendToStream(tenant.stream('a'), [1, 2, 3].map((n) => ({ type: counted, data: { n } })), { expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) });
        const last = await store.appendToStream(tenant.stream('b'), [4, 5].map((i) => ({ type: other, data: { i } })), { expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) });

        expect(await store.countEventsAfter(before)).toBe(5);
        expect(await store.countEventsAfter(before, { types: [counted] })).toBe(3);
        expect(await store.countEventsAfter(before, { types: [counted, other] })).toBe(5);
        expect(await store.countEventsAfter(before, { types: [] })).toBe(0);
        expect(await store.countEventsAfter(before, { limit: 2 })).toBe(2);
        expect(await store.countEventsAfter(before, { types: [other], limit: 10 })).toBe(2);
        expect(await store.countEventsAfter(last.position)).toBe(0);
      });
    });

    describe('appendToStreams', () => {
      const counted = (...ns: number[]) => ns.map((n) => ({ type: 'Counted', data: { n } }));

      it("writes a tenant's stream and a system stream together, each at its next revision, and reports the last event's position", async () => {
        const tenant = newTenant();
        await tenant.append('a', [1], 'no_stream');
        const claim = systemStream('claim', randomUUID());
        const systemMetadata = metadataFor(tenant.tenantId, { tenantId: null });
        const result = await store.appendToStreams([
          { streamName: tenant.stream('a'), events: counted(2, 3), expectedRevision: 0n, metadata: metadataFor(tenant.tenantId) },
          { streamName: claim, events: counted(4), expectedRevision: 'no_stream', metadata: systemMetadata },
        ]);
        expect(result.nextExpectedRevisions).toEqual([2n, 0n]);
        expect(numbers(await store.readStream(tenant.stream('a')))).toEqual([1, 2, 3]);
        const [claimed] = await store.readStream(claim);
        expect(claimed).toMatchObject({ data: { n: 4 }, metadata: systemMetadata, streamRevision: 0n });
        const newest = [...(await store.readStream(tenant.stream('a'))), claimed!].map((event) => event.position).sort(comparePositions).at(-1);
        expect(result.position).toEqual(newest);
      });

      it('writes nothing when any one stream is not where its caller expected', async () => {
        const tenant = newTenant();
        await tenant.append('taken', [1], 'no_stream');
        const failure = store.appendToStreams([
          { streamName: tenant.stream('fresh'), events: counted(2), expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) },
          { streamName: tenant.stream('taken'), events: counted(3), expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) },
        ]);
        await expect(failure).rejects.toBeInstanceOf(WrongExpectedRevisionError);
        expect(await store.readStream(tenant.stream('fresh'))).toEqual([]);
        expect(numbers(await store.readStream(tenant.stream('taken')))).toEqual([1]);
      });

      it('refuses a stream named twice, and a part whose metadata names another tenant, writing nothing', async () => {
        const tenant = newTenant();
        const part = (id: string, tenantId = tenant.tenantId) =>
          ({ streamName: tenant.stream(id), events: counted(1), expectedRevision: 'any', metadata: metadataFor(tenantId) }) as const;
        await expect(store.appendToStreams([part('a'), part('a')])).rejects.toThrow(/names a stream twice/);
        await expect(store.appendToStreams([part('a'), part('b', randomUUID())])).rejects.toThrow(/does not belong to tenant/);
        expect(await store.readStream(tenant.stream('a'))).toEqual([]);
      });
    });

    describe('subscribeToAll', () => {
      /** A subscription that records what it receives; `received(n)` resolves once n events have arrived. */
      const record = (options: Parameters<EventStore['subscribeToAll']>[0], handle = async (_events: RecordedEvent[]) => {}) => {
        const events: RecordedEvent[] = [];
        const waiters: { count: number; resolve: () => void }[] = [];
        const subscription = store.subscribeToAll(options, async (batch) => {
          await handle(batch);
          events.push(...batch);
          for (const waiter of waiters.filter((w) => events.length >= w.count)) waiter.resolve();
        });
        const received = (count: number) =>
          new Promise<void>((resolve) => (events.length >= count ? resolve() : waiters.push({ count, resolve })));
        return { events, received, stop: () => subscription.stop() };
      };

      it('delivers existing events, then live ones, in order, until stopped', async () => {
        const tenant = newTenant();
        await tenant.append('a', [1, 2], 'no_stream');
        await tenant.append('b', [3], 'no_stream');

        const subscription = record({ after: START, tenantId: tenant.tenantId });
        await subscription.received(3);
        await tenant.append('a', [4], 1n);
        await tenant.append('c', [5, 6], 'no_stream');
        await subscription.received(6);
        await subscription.stop();

        expect(numbers(subscription.events)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(subscription.events.every((event) => event.metadata.tenantId === tenant.tenantId)).toBe(true);
      });

      it('with a batch window, delivers the events appended one by one during it in one batch', async () => {
        const tenant = newTenant();
        const batchSizes: number[] = [];
        // A window far longer than five appends take, so that all of them land in it.
        const subscription = record({ tenantId: tenant.tenantId, batchWindowMs: 1500 }, async (batch) => void batchSizes.push(batch.length));
        await tenant.append('a', [1], 'no_stream');
        await subscription.received(1);
        for (let n = 2; n <= 6; n++) await tenant.append('a', [n], BigInt(n - 2));
        await subscription.received(6);
        await subscription.stop();

        expect(numbers(subscription.events)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(batchSizes).toEqual([1, 5]);
      });

      it('starts strictly after the given position', async () => {
        const tenant = newTenant();
        await tenant.append('a', [1, 2, 3], 'no_stream');
        const [, second] = await readAllOnceVisible({ tenantId: tenant.tenantId }, 3);

        const subscription = record({ after: second!.position, tenantId: tenant.tenantId });
        await subscription.received(1);
        await tenant.append('a', [4], 2n);
        await subscription.received(2);
        await subscription.stop();

        expect(numbers(subscription.events)).toEqual([3, 4]);
      });

      it('reports a failing handler through onError and offers the same events again', async () => {
        const tenant = newTenant();
        await tenant.append('a', [1, 2], 'no_stream');
        const errors: unknown[] = [];
        let failuresLeft = 1;
        const subscription = record(
          { tenantId: tenant.tenantId, onError: (error) => errors.push(error) },
          async () => {
            if (failuresLeft-- > 0) throw new Error('handler failed once');
          },
        );
        await subscription.received(2);
        await subscription.stop();

        expect(errors).toEqual([new Error('handler failed once')]);
        expect(numbers(subscription.events)).toEqual([1, 2]);
      });
    });

    describe('event schemas', () => {
      const nested = { list: [1, 'two', null], flag: true };

      it('validates appended events against their schemas and writes nothing when one is invalid or of an unknown type', async () => {
        const tenant = newTenant();
        const append = (events: { type: string; data: Record<string, unknown> }[]) =>
          store.appendToStream(tenant.stream('a'), events, { expectedRevision: 'any', metadata: metadataFor(tenant.tenantId) });
        await expect(append([{ type: 'Counted', data: { n: 1 } }, { type: 'Counted', data: { n: 'two' } }])).rejects.toBeInstanceOf(InvalidEventError);
        await expect(append([{ type: 'NeverDeclared', data: {} }])).rejects.toThrow(/No schema for event type NeverDeclared/);
        await expect(
          store.appendToStreams([
            { streamName: tenant.stream('b'), events: [{ type: 'Counted', data: { n: 1 } }], expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) },
            { streamName: tenant.stream('c'), events: [{ type: 'Claimed', data: {} }], expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) },
          ]),
        ).rejects.toBeInstanceOf(InvalidEventError);
        for (const id of ['a', 'b', 'c']) expect(await store.readStream(tenant.stream(id))).toEqual([]);
      });

      it('upcasts events written under an older version and stamps each event with its schema version', async () => {
        const tenant = newTenant();
        await store.appendToStream(tenant.stream('a'), [{ type: 'ThingNamed', data: { name: 'first', nested } }], { expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) });
        await newerStore.appendToStream(tenant.stream('a'), [{ type: 'ThingNamed', data: { title: 'second', nested } }, { type: 'Counted', data: { n: 3 } }], {
          expectedRevision: 0n,
          metadata: metadataFor(tenant.tenantId),
        });

        const read = await newerStore.readStream(tenant.stream('a'));
        expect(read.map((event) => [event.data, event.metadata.schemaVersion])).toEqual([[{ title: 'first', nested }, 2], [{ title: 'second', nested }, 2], [{ n: 3 }, 1]]);
        let all: RecordedEvent[] = [];
        for (let attempt = 0; all.length < 3 && attempt < 1000; attempt++) {
          all = await newerStore.readAll({ tenantId: tenant.tenantId });
          if (all.length < 3) await pause(20);
        }
        expect(all.map((event) => [event.data, event.metadata.schemaVersion])).toEqual(read.map((event) => [event.data, event.metadata.schemaVersion]));
      });

      it('refuses to fold events a later release wrote, and passes them to readAll and subscriptions as stored, flagged unreadable', async () => {
        const tenant = newTenant();
        await store.appendToStream(tenant.stream('a'), [{ type: 'Counted', data: { n: 1 } }], { expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) });
        await newerStore.appendToStream(tenant.stream('a'), [{ type: 'ThingArchived', data: { reason: 'done' } }], { expectedRevision: 0n, metadata: metadataFor(tenant.tenantId) });
        await newerStore.appendToStream(tenant.stream('b'), [{ type: 'ThingNamed', data: { title: 'new', nested } }], { expectedRevision: 'no_stream', metadata: metadataFor(tenant.tenantId) });

        await expect(store.readStream(tenant.stream('a'))).rejects.toBeInstanceOf(UnreadableEventError);
        await expect(store.readStream(tenant.stream('b'))).rejects.toThrow(/written as version 2; this code knows up to version 1/);
        const expected = [
          { type: 'Counted', data: { n: 1 }, unreadable: undefined },
          { type: 'ThingArchived', data: { reason: 'done' }, unreadable: expect.stringMatching(/no schema for event type ThingArchived/) },
          { type: 'ThingNamed', data: { title: 'new', nested }, unreadable: expect.stringMatching(/written as version 2/) },
        ];
        const shape = (events: RecordedEvent[]) => events.map(({ type, data, unreadable }) => ({ type, data, unreadable }));
        expect(shape(await readAllOnceVisible({ tenantId: tenant.tenantId }, 3))).toEqual(expected);

        const delivered: RecordedEvent[] = [];
        const subscription = store.subscribeToAll({ tenantId: tenant.tenantId }, async (events) => void delivered.push(...events));
        for (let attempt = 0; delivered.length < 3 && attempt < 1000; attempt++) await pause(20);
        await subscription.stop();
        expect(shape(delivered)).toEqual(expected);
      });
    });
  });
}
