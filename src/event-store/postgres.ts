// Postgres adapter of the event store (the default). See migrations/0001_event_store.sql for the
// table, the append function and the append-only triggers. It speaks plain `pg` on a pool of its own:
// appends are the write path of every command, and slonik's per-query work (token building, result
// validation) cost about two thirds of append throughput in `npm run bench -- event-store`.
// Appends of events an inline projection reads are the exception: they run in a slonik transaction
// that also applies those projections (src/event-store/projection.ts, `inline`).
import { setTimeout as pauseUnlessAborted } from 'node:timers/promises';
import type pg from 'pg';
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import type { Notifications } from '../db/notifications.ts';
import { handlesEventType, type Projection } from './projection.ts';
import type { EventRegistry } from './schemas.ts';
import {
  WrongExpectedRevisionError,
  START,
  comparePositions,
  formatPosition,
  assertAppendableTogether,
  tenantOfStream,
  type AppendMetadata,
  type AppendResult,
  type MultiStreamAppendResult,
  type NewEvent,
  type StreamAppend,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type Position,
  type ReadAllOptions,
  type RecordedEvent,
} from './port.ts';

const EXPECTED_ANY = -1n;
const EXPECTED_NO_STREAM = -2n;
const DEFAULT_READ_BATCH = 1000;
/** Subscribers also poll this often, in case a notification was lost with a dropped connection. */
const SUBSCRIPTION_POLL_MS = 2000;
/** Events hidden behind an older running transaction usually show within a millisecond or two. */
const HORIZON_RECHECK_MS = 2;
const ERROR_RETRY_MS = 1000;
const NOTIFY_INTERVAL_MS = 5;
/** Pages kept for the subscribers of one generation (see `shared`). */
const MAX_SHARED_READS = 32;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type EventRow = {
  event_id: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  stream_name: string;
  stream_revision: string;
  transaction_id: string;
  global_position: string;
  recorded_at: Date;
};

/**
 * Appends events to one stream in one statement. $3 is the expected revision: -1 any, -2 the stream
 * must not exist, n >= 0 its last revision must be n. No row is inserted when the stream is not where
 * the caller expected; a writer that took the same revision first makes the insert fail on
 * events_stream_revision_unique. Both mean WrongExpectedRevisionError. Each event has its own
 * metadata ($7), which differ in schemaVersion only.
 */
export const APPEND_SQL = `
  WITH stream AS (SELECT max(stream_revision) AS revision FROM events WHERE stream_name = $1)
  INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
  SELECT e.event_id, $1, coalesce(stream.revision, -1) + e.ordinality, $2, e.type, e.data, e.metadata
  FROM stream, unnest($4::uuid[], $5::text[], $6::jsonb[], $7::jsonb[]) WITH ORDINALITY AS e(event_id, type, data, metadata, ordinality)
  WHERE $3::bigint = -1 OR ($3::bigint = -2 AND stream.revision IS NULL) OR stream.revision = $3::bigint
  ORDER BY e.ordinality
  RETURNING event_id, stream_name, stream_revision::text AS revision, global_position::text, transaction_id::text, recorded_at`;

/**
 * APPEND_SQL for several streams at once, all or nothing: per stream $1 names, $2 tenants, $3
 * expected revisions; per event, in order, $4 metadata, $5 the 1-based index of its stream in $1, $6
 * its 1-based place among that stream's new events, $7 ids, $8 types, $9 data. Nothing is inserted
 * unless every stream is where its caller expected. Commands touching one stream (nearly all) keep
 * the one-stream statement: this one halved append throughput in `npm run bench -- event-store`.
 * Streams are joined by their number, not looked up by subscripting the arrays: a subscript copies
 * the array each time, which made a 20,000-stream cohort upload quadratic (40 s).
 */
export const MULTI_STREAM_APPEND_SQL = `
  WITH streams AS (
    SELECT s.name, s.tenant, s.expected, s.number,
      (SELECT max(stream_revision) FROM events WHERE stream_name = s.name) AS revision
    FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS s(name, tenant, expected, number))
  INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
  SELECT e.event_id, s.name, coalesce(s.revision, -1) + e.place, s.tenant, e.type, e.data, e.metadata
  FROM unnest($5::int[], $6::bigint[], $7::uuid[], $8::text[], $9::jsonb[], $4::jsonb[]) WITH ORDINALITY AS e(stream_number, place, event_id, type, data, metadata, ordinality)
    JOIN streams s ON s.number = e.stream_number
  WHERE (SELECT bool_and(coalesce(expected = -1 OR (expected = -2 AND revision IS NULL) OR revision = expected, false)) FROM streams)
  ORDER BY e.ordinality
  RETURNING event_id, stream_name, stream_revision::text AS revision, global_position::text, transaction_id::text, recorded_at`;

/** An appended event as encoded by its schema, with the id and metadata it is written with. */
type EncodedAppend = { eventId: string; type: string; data: Record<string, unknown>; metadata: EventMetadata };

/**
 * The statement and parameters appending `appends`, each event validated by its schema first
 * (InvalidEventError), and the events as encoded (what inline projections are given), by id.
 */
export function appendStatement(appends: StreamAppend[], registry: EventRegistry): { name: string; text: string; values: unknown[]; encoded: Map<string, EncodedAppend> } {
  const encoded = new Map<string, EncodedAppend>();
  const encode = (event: NewEvent, metadata: AppendMetadata) => {
    const { type, data, schemaVersion } = registry.encode(event);
    const eventId = uuidv7();
    encoded.set(eventId, { eventId, type, data, metadata: { ...metadata, schemaVersion } });
    return { eventId, type, data, schemaVersion };
  };
  if (appends.length === 1) {
    const [{ streamName, events: newEvents, expectedRevision, metadata }] = appends as [StreamAppend];
    const events = newEvents.map((event) => encode(event, metadata));
    return {
      name: 'events.append',
      text: APPEND_SQL,
      encoded,
      values: [
        streamName,
        tenantOfStream(streamName),
        encodeExpected(expectedRevision).toString(),
        events.map((event) => event.eventId),
        events.map((event) => event.type),
        events.map((event) => JSON.stringify(event.data)),
        events.map((event) => JSON.stringify({ ...metadata, schemaVersion: event.schemaVersion })),
      ],
    };
  }
  const events = appends.flatMap((append, index) =>
    append.events.map((event, place) => ({ ...encode(event, append.metadata), metadata: append.metadata, streamNumber: index + 1, place: place + 1 })),
  );
  return {
    name: 'events.append-to-streams',
    text: MULTI_STREAM_APPEND_SQL,
    encoded,
    values: [
      appends.map((append) => append.streamName),
      appends.map((append) => tenantOfStream(append.streamName)),
      appends.map((append) => encodeExpected(append.expectedRevision).toString()),
      events.map((event) => JSON.stringify({ ...event.metadata, schemaVersion: event.schemaVersion })),
      events.map((event) => event.streamNumber),
      events.map((event) => event.place),
      events.map((event) => event.eventId),
      events.map((event) => event.type),
      events.map((event) => JSON.stringify(event.data)),
    ],
  };
}

const eventColumns = (table: string) => `${table}.event_id, ${table}.type, ${table}.data, ${table}.metadata,
  ${table}.stream_name, ${table}.stream_revision::text, ${table}.transaction_id::text, ${table}.global_position::text, ${table}.recorded_at`;

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    eventId: row.event_id,
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    streamName: row.stream_name,
    streamRevision: BigInt(row.stream_revision),
    position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.global_position) },
    recordedAt: row.recorded_at.toISOString(),
  };
}

/** What an inline projection needs: the read models' pool, whose transaction appends and applies together. */
export type InlineProjections = { db: DatabasePool; projections: readonly Projection[] };

export function createPostgresEventStore(pool: pg.Pool, notifications: Notifications, registry: EventRegistry, inline: InlineProjections | null = null): EventStore {
  // A page of events below the read horizon, and whether committed events wait beyond it: an older
  // transaction (in any database of the cluster) still runs, and events committed after it started
  // stay invisible until it ends, since they may have taken later positions than its own. The newest
  // event is found as "the last row by the index" on purpose: with LIMIT 1 and a plain range
  // condition the planner expects matches everywhere and scans the table (17 ms at 50,000 events,
  // measured). The page is joined to one row, so an empty page still answers the question.
  const readPage = async (options: ReadAllOptions): Promise<{ events: RecordedEvent[]; full: boolean; hidden: boolean }> => {
    const after = options.after ?? START;
    const maxCount = options.maxCount ?? DEFAULT_READ_BATCH;
    const params: unknown[] = [after.commit.toString(), after.prepare.toString(), maxCount];
    if (options.tenantId) params.push(options.tenantId);
    const { rows } = await pool.query<Partial<EventRow> & { hidden: boolean }>({
      name: options.tenantId ? 'events.read-page-of-tenant' : 'events.read-page',
      text: `WITH page AS (
         SELECT * FROM events
         WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)
           AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
           ${options.tenantId ? 'AND tenant_id = $4' : ''}
         ORDER BY transaction_id, global_position
         LIMIT $3)
       SELECT ${eventColumns('page')},
         EXISTS (SELECT 1 FROM (SELECT transaction_id FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1) newest
                 WHERE newest.transaction_id >= pg_snapshot_xmin(pg_current_snapshot())) AS hidden
       FROM (VALUES (1)) AS one LEFT JOIN page ON true
       ORDER BY page.transaction_id, page.global_position`,
      values: params,
    });
    // Parsed once per page: subscribers standing at the same position share the page (`shared`).
    const events = rows[0]!.event_id === null ? [] : (rows as EventRow[]).map((row) => registry.parse(toRecordedEvent(row)));
    return { events, full: events.length === maxCount, hidden: rows[0]!.hidden };
  };

  // The subscriptions of a process (one per projection) mostly stand at the same position and are
  // woken together, so they share their reads. A generation starts with every append of this process
  // and every notification of another's; within one, a read at a given position is made once and its
  // answer (the same array: callers must not change it) given to every subscriber asking for it. That
  // is as fresh as each needs: whatever was announced before the generation began, the read sees.
  let sharedReads = new Map<string, Promise<unknown>>();
  const newGeneration = () => {
    sharedReads = new Map();
  };
  const shared = <T>(key: string, run: () => Promise<T>): Promise<T> => {
    let read = sharedReads.get(key) as Promise<T> | undefined;
    if (!read) {
      const reads = sharedReads;
      read = run();
      reads.set(key, read);
      read.catch(() => reads.delete(key));
      // A long catch-up with no append reads page after page in one generation: keep only the latest
      // pages (a subscriber further behind reads its page again).
      if (reads.size > MAX_SHARED_READS) reads.delete(reads.keys().next().value!);
    }
    return read;
  };
  const readForSubscriber = (after: Position, tenantId: string | undefined) =>
    shared(`read ${formatPosition(after)} ${tenantId ?? ''}`, () => readPage({ after, ...(tenantId ? { tenantId } : {}) }));
  // Events hidden beyond the horizon usually show within a millisecond or two: look again shortly, in
  // a new generation, rather than wait for a notification that has already come.
  const pauseForHorizon = () =>
    shared('horizon', async () => {
      await pause(HORIZON_RECHECK_MS);
      newGeneration();
    });

  // Wakes catch-up subscribers: those of this process directly, those of other processes with
  // NOTIFY events_appended, whose payload names this process so that it ignores its own, and which is
  // not sent at all while no other process listens. The NOTIFY is sent after the append's commit, not
  // inside its transaction (a NOTIFY in the transaction serialises every committer on the notify
  // queue lock), and at most one per NOTIFY_INTERVAL_MS (leading and trailing edge), so under load it
  // costs a few statements a second. Should a process die between commit and NOTIFY, or start
  // listening unnoticed for a moment, subscribers still poll every SUBSCRIPTION_POLL_MS.
  const { instanceId } = notifications;
  const localSubscribers = new Set<() => void>();
  const wakeSubscribers = () => {
    newGeneration();
    for (const wake of localSubscribers) wake();
  };
  let lastNotifyAt = Number.NEGATIVE_INFINITY;
  let trailingNotify: NodeJS.Timeout | null = null;
  const sendNotify = () => {
    lastNotifyAt = performance.now();
    void pool.query({ name: 'events.notify', text: `SELECT pg_notify('events_appended', $1)`, values: [instanceId] }).catch(() => {});
  };
  const announceAppend = (): void => {
    wakeSubscribers();
    if (trailingNotify || !notifications.peersListening()) return;
    const wait = lastNotifyAt + NOTIFY_INTERVAL_MS - performance.now();
    if (wait <= 0) sendNotify();
    else {
      trailingNotify = setTimeout(() => {
        trailingNotify = null;
        sendNotify();
      }, wait);
      trailingNotify.unref();
    }
  };
  let listeningForOthers: Promise<() => void> | null = null;
  const listenForOthers = () =>
    (listeningForOthers ??= notifications.listen('events_appended', (payload) => payload !== instanceId && wakeSubscribers()));

  // An append of events an inline projection reads runs in a transaction of the read models' pool
  // (the projections speak slonik), which applies them and records that it did before it commits.
  const inlineProjections = inline?.projections.filter((projection) => projection.inline) ?? [];
  const appendInline = async (statement: ReturnType<typeof appendStatement>, projections: readonly Projection[]): Promise<AppendedRow[]> =>
    inline!.db.transaction(async (tx) => {
      const rows = (await tx.any(asSlonikQuery(statement))) as unknown as AppendedRow[];
      if (rows.length > 0) await applyInline(tx, projections, rows, statement.encoded);
      return rows;
    });

  const appendToStreams = async (appends: StreamAppend[]): Promise<MultiStreamAppendResult> => {
    assertAppendableTogether(appends);
    // Named, so each connection prepares it once.
    const statement = appendStatement(appends, registry);
    const types = new Set(appends.flatMap((append) => append.events.map((event) => event.type)));
    const inlineHere = inlineProjections.filter((projection) => [...types].some((type) => handlesEventType(projection, type)));
    for (let attempt = 1; ; attempt++) {
      try {
        const rows = inlineHere.length > 0 ? await appendInline(statement, inlineHere) : (await pool.query<AppendedRow>(statement)).rows;
        if (rows.length === 0) throw WrongExpectedRevisionError.of(appends);
        announceAppend();
        const nextRevision = new Map(rows.map((row) => [row.stream_name, BigInt(row.revision)] as const));
        const last = rows.reduce((a, b) => (BigInt(b.global_position) > BigInt(a.global_position) ? b : a));
        return {
          nextExpectedRevisions: appends.map((append) => nextRevision.get(append.streamName)!),
          position: { commit: BigInt(last.transaction_id), prepare: BigInt(last.global_position) },
        };
      } catch (error) {
        if (!isConcurrentWriter(error)) throw error;
        // 'any' lost a race for the next revision to another writer: take the revision after theirs.
        if (appends.every((append) => append.expectedRevision === 'any') && attempt < 10) continue;
        throw WrongExpectedRevisionError.of(appends);
      }
    }
  };

  return {
    inlineProjections: inlineProjections.map((projection) => projection.name),

    async appendToStream(streamName, events, { expectedRevision, metadata }): Promise<AppendResult> {
      const { nextExpectedRevisions, position } = await appendToStreams([{ streamName, events, expectedRevision, metadata }]);
      return { nextExpectedRevision: nextExpectedRevisions[0]!, position };
    },

    appendToStreams,

    async readStream(streamName, options = {}) {
      const { rows } = await pool.query<EventRow>({
        name: 'events.read-stream',
        text: `SELECT ${eventColumns('events')} FROM events WHERE stream_name = $1 AND stream_revision >= $2::bigint ORDER BY events.stream_revision`,
        values: [streamName, (options.fromRevision ?? 0n).toString()],
      });
      return rows.map((row) => registry.parseStrict(toRecordedEvent(row)));
    },

    readAll: async (options) => (await readPage(options ?? {})).events,

    subscribeToAll({ after = START, tenantId, batchWindowMs, onError }, onEvents) {
      let position: Position = after;
      let stopped = false;
      // Set by every wake-up; a read clears it first, so one that lands between a read and the wait is
      // not lost.
      let woken = false;
      let wakeSleeper: () => void = () => {};
      const sleep = () =>
        woken
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              // A poll must really read: it looks for what no notification announced.
              const timer = setTimeout(() => {
                newGeneration();
                resolve();
              }, SUBSCRIPTION_POLL_MS);
              wakeSleeper = () => {
                clearTimeout(timer);
                resolve();
              };
            });
      const wake = () => {
        woken = true;
        wakeSleeper();
      };
      localSubscribers.add(wake);
      // Ends a batch window at once on stop (wake-ups do not: the window is there to let them pass).
      const stopping = new AbortController();
      const loop = (async () => {
        await listenForOthers();
        while (!stopped) {
          try {
            woken = false;
            const { events, full, hidden } = await readForSubscriber(position, tenantId);
            if (events.length > 0) {
              await onEvents(events);
              position = events[events.length - 1]!.position;
            }
            // A page that was not full held every event visible then; anything newer comes with a
            // wake-up, except what the horizon hid.
            if (full) continue;
            // Gather what is appended during the window and read it at once (the read after it is
            // fresh: every append begins a new generation).
            if (batchWindowMs && events.length > 0) await pauseUnlessAborted(batchWindowMs, undefined, { signal: stopping.signal }).catch(() => {});
            else if (hidden) await pauseForHorizon();
            else await sleep();
          } catch (error) {
            // The same batch is offered again after a pause: the handler decides what it had applied.
            onError?.(error);
            await pause(ERROR_RETRY_MS);
          }
        }
      })();
      return {
        async stop() {
          stopped = true;
          stopping.abort();
          wake();
          localSubscribers.delete(wake);
          await loop.catch(() => {});
        },
      };
    },

    // Both count every committed event, including those still beyond the read horizon: to an operator
    // they are waiting all the same.
    async headPosition() {
      const { rows } = await pool.query<{ transaction_id: string; global_position: string }>(
        // Ordered by the columns, not by the text output columns of the same names ('999' > '1000').
        'SELECT transaction_id::text, global_position::text FROM events ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1',
      );
      return rows[0] ? { commit: BigInt(rows[0].transaction_id), prepare: BigInt(rows[0].global_position) } : START;
    },

    async countEventsAfter(after, { types, limit } = {}) {
      if (types?.length === 0) return 0;
      const { rows } = await pool.query<{ count: number }>({
        text: `SELECT count(*)::int AS count FROM (
                 SELECT 1 FROM events
                 WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint) ${types ? 'AND type = ANY($4::text[])' : ''}
                 LIMIT $3) AS counted`,
        values: [after.commit.toString(), after.prepare.toString(), limit ?? null, ...(types ? [types] : [])],
      });
      return rows[0]!.count;
    },

    async close() {
      if (listeningForOthers) (await listeningForOthers)();
    },
  };
}

function encodeExpected(expected: ExpectedRevision): bigint {
  if (expected === 'any') return EXPECTED_ANY;
  if (expected === 'no_stream') return EXPECTED_NO_STREAM;
  return expected;
}

/** Another append took the same revision of the stream first. */
function isConcurrentWriter(error: unknown): boolean {
  // Through slonik (an inline append), pg's error is the cause.
  const { code, constraint } = ((error as { cause?: unknown }).cause ?? error) as { code?: string; constraint?: string };
  return code === '23505' && constraint === 'events_stream_revision_unique';
}

type AppendedRow = { event_id: string; stream_name: string; revision: string; global_position: string; transaction_id: string; recorded_at: Date | string };

/** A pg statement ($n placeholders) as a slonik query with the same text and values. */
function asSlonikQuery({ text, values }: { text: string; values: unknown[] }) {
  const parts = text.split(/\$(\d+)/);
  const strings = parts.filter((_, index) => index % 2 === 0);
  // An array is bound as slonik's array token of the type it is cast to (`$4::uuid[]`).
  const bound = parts.flatMap((part, index) => {
    if (index % 2 === 0) return [];
    const value = values[Number(part) - 1];
    if (!Array.isArray(value)) return [value];
    const memberType = /^::(\w+)\[\]/.exec(parts[index + 1] ?? '')?.[1];
    if (!memberType) throw new Error(`An array parameter $${part} without an array cast`);
    // slonik quotes the type's name: the SQL aliases need their canonical names.
    return [sql.array(value, ({ bigint: 'int8', int: 'int4' } as Record<string, string>)[memberType] ?? memberType)];
  });
  // slonik accepts only what looks like a template literal: raw strings, frozen.
  const template = Object.freeze(Object.assign([...strings], { raw: Object.freeze([...strings]) }));
  return sql.unsafe(template, ...(bound as Parameters<typeof sql.unsafe>[1][]));
}

/**
 * Applies the appended events to each inline projection, in order, in the appending transaction, and
 * records the transaction as applied for each (the runner then skips its events). The events are the
 * ones just encoded by their schemas: the shape a read would parse them into.
 */
async function applyInline(tx: DatabaseTransactionConnection, projections: readonly Projection[], rows: AppendedRow[], encoded: Map<string, EncodedAppend>) {
  const events: RecordedEvent[] = rows
    .map((row) => ({
      ...encoded.get(row.event_id)!,
      streamName: row.stream_name,
      streamRevision: BigInt(row.revision),
      position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.global_position) },
      recordedAt: new Date(row.recorded_at).toISOString(),
    }))
    .sort((a, b) => comparePositions(a.position, b.position));
  for (const projection of projections) await projection.apply(tx, events.filter((event) => handlesEventType(projection, event.type)));
  await tx.query(sql.unsafe`
    INSERT INTO projection_inline_transactions (projection, transaction_id)
    SELECT unnest(${sql.array(projections.map((projection) => projection.name), 'text')}::text[]), ${rows[0]!.transaction_id}::bigint`);
}
