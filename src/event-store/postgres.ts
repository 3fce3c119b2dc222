// Postgres adapter of the event store (the default). See migrations/0001_event_store.sql for the
// table, the append function and the append-only triggers. It speaks plain `pg` on a pool of its own:
// appends are the write path of every command, and slonik's per-query work (token building, result
// validation) cost about two thirds of append throughput in `npm run bench -- event-store`.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import type { Notifications } from '../db/notifications.ts';
import {
  WrongExpectedRevisionError,
  START,
  formatPosition,
  assertAppendable,
  type AppendResult,
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
 * events_stream_revision_unique. Both mean WrongExpectedRevisionError.
 */
export const APPEND_SQL = `
  WITH stream AS (SELECT max(stream_revision) AS revision FROM events WHERE stream_name = $1)
  INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
  SELECT e.event_id, $1, coalesce(stream.revision, -1) + e.ordinality, $2, e.type, e.data, $7::jsonb
  FROM stream, unnest($4::uuid[], $5::text[], $6::jsonb[]) WITH ORDINALITY AS e(event_id, type, data, ordinality)
  WHERE $3::bigint = -1 OR ($3::bigint = -2 AND stream.revision IS NULL) OR stream.revision = $3::bigint
  ORDER BY e.ordinality
  RETURNING stream_revision::text AS revision, global_position::text, transaction_id::text`;

const EVENT_COLUMNS = `event_id, type, data, metadata, stream_name, stream_revision::text,
  transaction_id::text, global_position::text, recorded_at`;

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

export function createPostgresEventStore(pool: pg.Pool, notifications: Notifications): EventStore {
  const queryAll = async (options: ReadAllOptions): Promise<RecordedEvent[]> => {
    const after = options.after ?? START;
    const params: unknown[] = [after.commit.toString(), after.prepare.toString(), options.maxCount ?? DEFAULT_READ_BATCH];
    if (options.tenantId) params.push(options.tenantId);
    // ORDER BY names the table's columns: the selected ones are text.
    const { rows } = await pool.query<EventRow>({
      name: options.tenantId ? 'events.read-all-of-tenant' : 'events.read-all',
      text: `SELECT ${EVENT_COLUMNS} FROM events
       WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)
         AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
         ${options.tenantId ? 'AND tenant_id = $4' : ''}
       ORDER BY events.transaction_id, events.global_position
       LIMIT $3`,
      values: params,
    });
    return rows.map(toRecordedEvent);
  };

  // Whether the newest event is still beyond the read horizon. Written as "the last row by the index"
  // on purpose: with LIMIT 1 and a plain range condition the planner expects matches everywhere and
  // scans the table (17 ms at 50,000 events, measured), on every empty read.
  const hasEventsBeyondHorizon = async () =>
    (
      await pool.query({
        name: 'events.beyond-horizon',
        text: `SELECT 1 FROM (SELECT transaction_id FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1) newest
               WHERE newest.transaction_id >= pg_snapshot_xmin(pg_current_snapshot())`,
      })
    ).rowCount! > 0;

  // The subscriptions of a process (one per projection) mostly stand at the same position and are
  // woken together, so they share their reads. A generation starts with every append of this process
  // and every notification of another's; within one, a read at a given position is made once and its
  // answer (the same array: callers must not change it) given to every subscriber asking for it. That
  // is as fresh as each needs: whatever was announced before the generation began, the read sees.
  let generation = 0;
  let sharedReads = new Map<string, Promise<unknown>>();
  const newGeneration = () => {
    generation++;
    sharedReads = new Map();
  };
  const shared = <T>(key: string, run: () => Promise<T>): Promise<T> => {
    let read = sharedReads.get(key) as Promise<T> | undefined;
    if (!read) {
      const reads = sharedReads;
      read = run();
      reads.set(key, read);
      read.catch(() => reads.delete(key));
    }
    return read;
  };
  const readForSubscriber = (after: Position, tenantId: string | undefined) =>
    shared(`read ${formatPosition(after)} ${tenantId ?? ''}`, () => queryAll({ after, ...(tenantId ? { tenantId } : {}) }));
  // Committed events can stay invisible while an older transaction (in any database of the cluster)
  // runs: when the newest is beyond the horizon, look again shortly, in a new generation, instead of
  // waiting for the next notification. Resolves whether to read again now.
  const awaitHorizon = () =>
    shared('horizon', async () => {
      if (!(await hasEventsBeyondHorizon())) return false;
      await pause(HORIZON_RECHECK_MS);
      newGeneration();
      return true;
    });

  // Wakes catch-up subscribers: those of this process directly, those of other processes with
  // NOTIFY events_appended, whose payload names this process so that it ignores its own. The NOTIFY
  // is sent after the append's commit, not inside its transaction (a NOTIFY in the transaction
  // serialises every committer on the notify queue lock), and at most one per NOTIFY_INTERVAL_MS
  // (leading and trailing edge), so under load it costs a few statements a second. Should a process
  // die between commit and NOTIFY, subscribers still poll every SUBSCRIPTION_POLL_MS.
  const instanceId = randomUUID();
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
    if (trailingNotify) return;
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

  return {
    async appendToStream(streamName, events, { expectedRevision, metadata }): Promise<AppendResult> {
      const tenantId = assertAppendable(streamName, events, metadata);
      for (let attempt = 1; ; attempt++) {
        try {
          const { rows } = await pool.query<{ revision: string; global_position: string; transaction_id: string }>({
            // Named, so each connection prepares and plans it once.
            name: 'events.append',
            text: APPEND_SQL,
            values: [
              streamName,
              tenantId,
              encodeExpected(expectedRevision).toString(),
              events.map(() => uuidv7()),
              events.map((event) => event.type),
              events.map((event) => JSON.stringify(event.data)),
              JSON.stringify(metadata),
            ],
          });
          const last = rows[rows.length - 1];
          if (!last) throw new WrongExpectedRevisionError(streamName, expectedRevision);
          announceAppend();
          return {
            nextExpectedRevision: BigInt(last.revision),
            position: { commit: BigInt(last.transaction_id), prepare: BigInt(last.global_position) },
          };
        } catch (error) {
          if (!isConcurrentWriter(error)) throw error;
          // 'any' lost a race for the next revision to another writer: take the revision after theirs.
          if (expectedRevision === 'any' && attempt < 10) continue;
          throw new WrongExpectedRevisionError(streamName, expectedRevision);
        }
      }
    },

    async readStream(streamName, options = {}) {
      const { rows } = await pool.query<EventRow>({
        name: 'events.read-stream',
        text: `SELECT ${EVENT_COLUMNS} FROM events WHERE stream_name = $1 AND stream_revision >= $2::bigint ORDER BY events.stream_revision`,
        values: [streamName, (options.fromRevision ?? 0n).toString()],
      });
      return rows.map(toRecordedEvent);
    },

    readAll: queryAll,

    subscribeToAll({ after = START, tenantId, onError }, onEvents) {
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
      const loop = (async () => {
        await listenForOthers();
        while (!stopped) {
          try {
            woken = false;
            const batch = await readForSubscriber(position, tenantId);
            if (batch.length === 0) {
              if (!(await awaitHorizon())) await sleep();
              continue;
            }
            await onEvents(batch);
            position = batch[batch.length - 1]!.position;
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
          wake();
          localSubscribers.delete(wake);
          await loop.catch(() => {});
        },
      };
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
  const { code, constraint } = error as { code?: string; constraint?: string };
  return code === '23505' && constraint === 'events_stream_revision_unique';
}
