// Postgres adapter of the event store (the default). See migrations/0001_event_store.sql for the
// table, the append function and the append-only triggers.
import { sql, type DatabasePool } from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import type { Notifications } from '../db/notifications.ts';
import {
  WrongExpectedRevisionError,
  START,
  tenantOfStream,
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
const HORIZON_RECHECK_MS = 10;
const ERROR_RETRY_MS = 1000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const eventRow = z.object({
  event_id: z.string(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  metadata: z.custom<EventMetadata>(),
  stream_name: z.string(),
  stream_revision: z.string(),
  transaction_id: z.string(),
  global_position: z.string(),
  recorded_at: z.string(),
});

const appendRow = z.object({ next_revision: z.string(), last_position: z.string(), transaction_id: z.string() });

const EVENT_COLUMNS = sql.fragment`event_id, type, data, metadata, stream_name, stream_revision::text,
  transaction_id::text, global_position::text, recorded_at`;

function toRecordedEvent(row: z.infer<typeof eventRow>): RecordedEvent {
  return {
    eventId: row.event_id,
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    streamName: row.stream_name,
    streamRevision: BigInt(row.stream_revision),
    position: { commit: BigInt(row.transaction_id), prepare: BigInt(row.global_position) },
    recordedAt: row.recorded_at,
  };
}

export function createPostgresEventStore(pool: DatabasePool, notifications: Notifications): EventStore {
  const readAll = async (options: ReadAllOptions = {}): Promise<RecordedEvent[]> => {
    const after = options.after ?? START;
    const tenantFilter = options.tenantId ? sql.fragment`AND tenant_id = ${options.tenantId}` : sql.fragment``;
    const rows = await pool.any(sql.type(eventRow)`
      SELECT ${EVENT_COLUMNS} FROM events
      WHERE (transaction_id, global_position) > (${after.commit.toString()}::xid8, ${after.prepare.toString()}::bigint)
        AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ${tenantFilter}
      ORDER BY events.transaction_id, events.global_position -- the table columns: the output ones are text
      LIMIT ${options.maxCount ?? DEFAULT_READ_BATCH}`);
    return rows.map(toRecordedEvent);
  };

  // Wakes catch-up subscribers in every process. Sent after the append's commit, not inside it (a
  // NOTIFY in the transaction serialises all committers on the notify queue lock), and coalesced: at
  // most one in flight per process. Should a process die between commit and NOTIFY, subscribers
  // still poll every SUBSCRIPTION_POLL_MS.
  let notifyInFlight = false;
  let notifyPending = false;
  const announceAppend = (): void => {
    if (notifyInFlight) {
      notifyPending = true;
      return;
    }
    notifyInFlight = true;
    notifyPending = false;
    void pool
      .query(sql.unsafe`SELECT pg_notify('events_appended', '')`)
      .catch(() => {})
      .finally(() => {
        notifyInFlight = false;
        if (notifyPending) announceAppend();
      });
  };

  const hasEventsBeyondHorizon = () =>
    pool.exists(sql.unsafe`SELECT 1 FROM events WHERE transaction_id >= pg_snapshot_xmin(pg_current_snapshot())`);

  return {
    async appendToStream(streamName, events, { expectedRevision, metadata }): Promise<AppendResult> {
      if (events.length === 0) throw new Error('appendToStream needs at least one event');
      const tenantId = tenantOfStream(streamName);
      if (tenantId !== metadata.tenantId) {
        throw new Error(`Stream ${streamName} does not belong to tenant ${metadata.tenantId ?? '(system)'}`);
      }
      for (let attempt = 1; ; attempt++) {
        try {
          const rows = await pool.many(sql.type(appendRow)`
            SELECT next_revision::text, last_position::text, transaction_id FROM append_to_stream(
              ${streamName}, ${tenantId}, ${encodeExpected(expectedRevision).toString()}::bigint,
              ${sql.array(events.map(() => uuidv7()), 'uuid')},
              ${sql.array(events.map((event) => event.type), 'text')},
              ${sql.array(events.map((event) => JSON.stringify(event.data)), 'jsonb')},
              ${sql.jsonb(metadata)})`);
          const last = rows[rows.length - 1]!;
          announceAppend();
          return {
            nextExpectedRevision: BigInt(last.next_revision),
            position: { commit: BigInt(last.transaction_id), prepare: BigInt(last.last_position) },
          };
        } catch (error) {
          const conflict = conflictOf(error);
          // 'any' lost a race for the next revision to another writer: take the revision after theirs.
          if (conflict === 'concurrent_writer' && expectedRevision === 'any' && attempt < 10) continue;
          if (conflict) throw new WrongExpectedRevisionError(streamName, expectedRevision);
          throw error;
        }
      }
    },

    async readStream(streamName, options = {}) {
      const rows = await pool.any(sql.type(eventRow)`
        SELECT ${EVENT_COLUMNS} FROM events
        WHERE stream_name = ${streamName} AND stream_revision >= ${(options.fromRevision ?? 0n).toString()}::bigint
        ORDER BY events.stream_revision`);
      return rows.map(toRecordedEvent);
    },

    readAll,

    subscribeToAll({ after = START, tenantId, onError }, onEvents) {
      let position: Position = after;
      let stopped = false;
      // Set by every notification; a read clears it first, so one that lands between a read and the
      // wait is not lost.
      let notified = false;
      let wake: () => void = () => {};
      const sleep = () =>
        notified
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, SUBSCRIPTION_POLL_MS);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
      const onNotification = () => {
        notified = true;
        wake();
      };
      const unlisten = notifications.listen('events_appended', onNotification);
      const loop = (async () => {
        await unlisten;
        while (!stopped) {
          try {
            notified = false;
            const batch = await readAll({ after: position, ...(tenantId ? { tenantId } : {}) });
            if (batch.length === 0) {
              // Committed events can stay invisible while an older transaction (in any database of the
              // cluster) runs; look again shortly instead of waiting for the next notification.
              if (await hasEventsBeyondHorizon()) await pause(HORIZON_RECHECK_MS);
              else await sleep();
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
          onNotification();
          (await unlisten)();
          await loop.catch(() => {});
        },
      };
    },

    async close() {},
  };
}

function encodeExpected(expected: ExpectedRevision): bigint {
  if (expected === 'any') return EXPECTED_ANY;
  if (expected === 'no_stream') return EXPECTED_NO_STREAM;
  return expected;
}

/** 'expected_revision': the stream was not where the caller expected; 'concurrent_writer': another append took that revision first. */
function conflictOf(error: unknown): 'expected_revision' | 'concurrent_writer' | null {
  for (let current: unknown = error; current; current = (current as { cause?: unknown }).cause) {
    const { code, constraint } = current as { code?: string; constraint?: string };
    if (code === 'EV001') return 'expected_revision';
    if (code === '23505' && constraint === 'events_stream_revision_unique') return 'concurrent_writer';
  }
  return null;
}
