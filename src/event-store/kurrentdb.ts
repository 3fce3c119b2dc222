// KurrentDB (formerly EventStoreDB) adapter of the event store, on @kurrent/kurrentdb-client, the
// maintained continuation of @eventstore/db-client. Positions are KurrentDB's own $all positions;
// one tenant's events are selected on the server by the stream-name prefix `tenant-<employerId>.`.
import { randomUUID } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import {
  ANY,
  AppendConsistencyViolationError,
  BACKWARDS,
  END,
  KurrentDBClient,
  NO_STREAM,
  StreamNotFoundError,
  WrongExpectedVersionError,
  eventTypeFilter,
  jsonEvent,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type Filter,
  type RecordedEvent as KurrentRecordedEvent,
  type StreamState,
} from '@kurrent/kurrentdb-client';
import { z } from 'zod';
import type { EventRegistry } from './schemas.ts';
import {
  START,
  WrongExpectedRevisionError,
  comparePositions,
  assertAppendable,
  assertAppendableTogether,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type Position,
  type RecordedEvent,
  type AppendMetadata,
  type NewEvent,
  type StreamAppend,
} from './port.ts';

const DEFAULT_READ_BATCH = 1000;
/** Pause before offering a failed batch again, or before resubscribing after a dropped subscription. */
const ERROR_RETRY_MS = 1000;

const eventData = z.record(z.string(), z.unknown());
const eventMetadata: z.ZodType<EventMetadata> = z.object({
  tenantId: z.string().nullable(),
  actor: z.object({ type: z.enum(['user', 'apiKey', 'scimToken', 'platformToken', 'smartClient', 'system']), id: z.string() }),
  correlationId: z.string(),
  causationId: z.string().nullable(),
  schemaVersion: z.number().int(),
  occurredAt: z.string(),
  ipAddress: z.string().optional(),
  userAgent: z.string().optional(),
  traceparent: z.string().optional(),
});

export function createKurrentDbEventStore(connectionString: string, registry: EventRegistry): EventStore {
  const client = KurrentDBClient.connectionString(connectionString);
  const toParsedEvent = (event: KurrentRecordedEvent) => registry.parse(toRecordedEvent(event));

  // Each event is validated by its schema and carries its schema's version in its metadata.
  const encode = (events: NewEvent[], metadata: AppendMetadata, asString: boolean) =>
    events.map((newEvent) => {
      const { type, data, schemaVersion } = registry.encode(newEvent);
      const eventMetadata: EventMetadata = { ...metadata, schemaVersion };
      return jsonEvent({ id: randomUUID(), type, data, metadata: asString ? { [ENCODED_METADATA]: JSON.stringify(eventMetadata) } : eventMetadata });
    });

  const readLastEvent = async (streamName: string): Promise<RecordedEvent> => {
    for await (const resolved of client.readStream(streamName, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })) {
      if (resolved.event) return toRecordedEvent(resolved.event);
    }
    throw new Error(`KurrentDB returned no event of ${streamName} right after appending to it`);
  };

  const store: EventStore = {
    inlineProjections: [],
    async appendToStream(streamName, events, { expectedRevision, metadata }) {
      assertAppendable(streamName, events, metadata);
      const encoded = encode(events, metadata, false);
      try {
        const result = await client.appendToStream(streamName, encoded, { streamState: toStreamState(expectedRevision) });
        if (!result.position) throw new Error(`KurrentDB did not report the position of the append to ${streamName}`);
        return { nextExpectedRevision: result.nextExpectedRevision, position: result.position };
      } catch (error) {
        if (error instanceof WrongExpectedVersionError) throw new WrongExpectedRevisionError(streamName, expectedRevision);
        throw error;
      }
    },

    // KurrentDB 25.1 and later append to several streams in one transaction (one stream takes the
    // classic append, which older servers have too). That API takes metadata as string values only,
    // so the metadata travels as one JSON string and is decoded on read; it reports the commit
    // position only, so the last event is read back for its exact position.
    async appendToStreams(appends) {
      assertAppendableTogether(appends);
      if (appends.length === 1) {
        const [{ streamName, events, expectedRevision, metadata }] = appends as [StreamAppend];
        const { nextExpectedRevision, position } = await store.appendToStream(streamName, events, { expectedRevision, metadata });
        return { nextExpectedRevisions: [nextExpectedRevision], position };
      }
      const encoded = appends.map(({ streamName, events, expectedRevision, metadata }) => ({
        streamName,
        expectedState: toStreamState(expectedRevision),
        events: encode(events, metadata, true),
      }));
      try {
        await client.multiStreamAppend(encoded);
      } catch (error) {
        if (error instanceof WrongExpectedVersionError || error instanceof AppendConsistencyViolationError) {
          throw WrongExpectedRevisionError.of(appends);
        }
        throw error;
      }
      const lastEvents = await Promise.all(appends.map(({ streamName }) => readLastEvent(streamName)));
      const position = lastEvents.map((event) => event.position).reduce((a, b) => (comparePositions(a, b) >= 0 ? a : b));
      return { nextExpectedRevisions: lastEvents.map((event) => event.streamRevision), position };
    },

    async readStream(streamName, { fromRevision = 0n } = {}) {
      const events: RecordedEvent[] = [];
      try {
        for await (const resolved of client.readStream(streamName, { fromRevision })) {
          if (resolved.event) events.push(registry.parseStrict(toRecordedEvent(resolved.event)));
        }
      } catch (error) {
        if (error instanceof StreamNotFoundError) return [];
        throw error;
      }
      return events;
    },

    async readAll({ after = START, tenantId, maxCount = DEFAULT_READ_BATCH } = {}) {
      const events: RecordedEvent[] = [];
      // KurrentDB reads $all from a position inclusively; one extra event covers the one at `after`.
      const read = client.readAll({ fromPosition: after, maxCount: maxCount + 1, filter: filterFor(tenantId) });
      for await (const resolved of read) {
        if (!resolved.event || comparePositions(resolved.event.position, after) <= 0) continue;
        events.push(toParsedEvent(resolved.event));
        if (events.length === maxCount) break;
      }
      return events;
    },

    subscribeToAll({ after = START, tenantId, batchWindowMs, onError }, onEvents) {
      let position: Position = after;
      let current: AllStreamSubscription | null = null;
      const stopping = new AbortController();
      const rest = () => pause(ERROR_RETRY_MS, undefined, { signal: stopping.signal }).catch(() => {});

      // Offers the batch until the handler accepts it: it decides what it had already applied.
      const deliver = async (events: RecordedEvent[]) => {
        while (!stopping.signal.aborted) {
          try {
            await onEvents(events);
            position = events[events.length - 1]!.position;
            return;
          } catch (error) {
            onError?.(error);
            await rest();
          }
        }
      };

      const loop = (async () => {
        while (!stopping.signal.aborted) {
          const subscription = client.subscribeToAll({ fromPosition: position, filter: filterFor(tenantId) });
          current = subscription;
          try {
            for await (const batch of inBatches(subscription)) {
              // Whether the server starts at `position` or after it, an event already delivered is skipped.
              const events = batch
                .flatMap((resolved) => (resolved.event ? [resolved.event] : []))
                .filter((event) => comparePositions(event.position, position) > 0)
                .map(toParsedEvent);
              if (events.length > 0) await deliver(events);
              // Let the events appended during the window gather in the subscription's buffer.
              if (batchWindowMs && batch.length < DEFAULT_READ_BATCH) await pause(batchWindowMs, undefined, { signal: stopping.signal }).catch(() => {});
            }
          } catch (error) {
            if (!stopping.signal.aborted) onError?.(error);
          } finally {
            await subscription.unsubscribe().catch(() => {});
          }
          // The subscription ended or failed: resubscribe from the last delivered position.
          if (!stopping.signal.aborted) await rest();
        }
      })();

      return {
        async stop() {
          stopping.abort();
          current?.destroy();
          await loop;
        },
      };
    },

    async headPosition() {
      for await (const resolved of client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1, filter: filterFor(undefined) })) {
        if (resolved.event?.position) return resolved.event.position;
      }
      return START;
    },

    // KurrentDB keeps no count: the events are read (filtered on the server) and counted here, so the
    // cost grows with the count, up to `limit`.
    async countEventsAfter(after, { types, limit = Number.MAX_SAFE_INTEGER } = {}) {
      if (types?.length === 0 || limit <= 0) return 0;
      const filter = types ? eventTypeFilter({ regex: `^(?:${types.map(escapeRegex).join('|')})$` }) : filterFor(undefined);
      let count = 0;
      // Inclusive from `after`, as in readAll: one extra event covers the one at `after`.
      for await (const resolved of client.readAll({ fromPosition: after, maxCount: limit + 1, filter })) {
        const event = resolved.event;
        if (!event?.position || comparePositions(event.position, after) <= 0 || event.streamId.startsWith('$')) continue;
        if (++count === limit) break;
      }
      return count;
    },

    async close() {
      await client.dispose();
    },
  };
  return store;
}

function toStreamState(expected: ExpectedRevision): StreamState {
  if (expected === 'any') return ANY;
  if (expected === 'no_stream') return NO_STREAM;
  return expected;
}

/** Our streams' events only: one tenant's by name prefix (see `tenantStream`), else all but `$` system streams. */
function filterFor(tenantId: string | undefined): Filter {
  return tenantId ? streamNameFilter({ prefixes: [`tenant-${tenantId}.`] }) : streamNameFilter({ regex: '^[^$]' });
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function toRecordedEvent(event: KurrentRecordedEvent): RecordedEvent {
  if (!event.isJson) throw new Error(`Event ${event.id} in ${event.streamId} is not JSON`);
  if (!event.position) throw new Error(`KurrentDB did not report the position of event ${event.id} (22.6 or later needed)`);
  return {
    eventId: event.id,
    type: event.type,
    data: eventData.parse(event.data),
    metadata: eventMetadata.parse(decodeMetadata(event.metadata)),
    streamName: event.streamId,
    streamRevision: event.revision,
    position: event.position,
    recordedAt: event.created.toISOString(),
  };
}

/** Metadata written by `appendToStreams` is one JSON string under this key. */
const ENCODED_METADATA = 'employerIntegrationsMetadata';

function decodeMetadata(metadata: unknown): unknown {
  const encoded = (metadata as Record<string, unknown> | undefined)?.[ENCODED_METADATA];
  return typeof encoded === 'string' ? JSON.parse(encoded) : metadata;
}

/** Groups what a subscription has already buffered into one batch, so handlers see batches, not single events. */
async function* inBatches(subscription: AllStreamSubscription): AsyncGenerator<AllStreamResolvedEvent[]> {
  for await (const first of subscription) {
    const batch = [first];
    let next: AllStreamResolvedEvent | null;
    while (batch.length < DEFAULT_READ_BATCH && (next = subscription.read()) !== null) batch.push(next);
    yield batch;
  }
}
