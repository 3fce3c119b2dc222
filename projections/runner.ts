// Runs projections: each follows the global event order from its checkpoint and applies batches in
// one transaction with its checkpoint. Several runner processes may run the same projection safely:
// the checkpoint row is locked per batch and events at or below it are skipped. A batch that keeps
// failing is applied event by event, and an event that fails alone is parked (projections/parking.ts)
// so the projection moves past it: one bad event never stalls the other tenants.
import { setTimeout as pause } from 'node:timers/promises';
import { BackendTerminatedError, ConnectionError, sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import type { Notifications } from '../src/db/notifications.ts';
import {
  START,
  comparePositions,
  formatPosition,
  parsePosition,
  type EventStore,
  type Position,
  type RecordedEvent,
  type Subscription,
} from '../src/event-store/port.ts';
import { handlesEventType, type Projection } from '../src/event-store/projection.ts';
import pLimit, { type LimitFunction } from 'p-limit';
import { inSpan, traceContextOf, tracingEnabled } from '../src/tracing.ts';
import { listParked, park, recordRetry, unpark, waitingBehind, waitingStreams, describeError, type SetAside } from './parking.ts';
import { CONTROL_CHANNEL, parseControl, pausedProjections } from './operations.ts';

export const CHECKPOINT_CHANNEL = 'projection_checkpoint';
const WAITER_POLL_MS = 250;
/** A failing batch is tried this often in all before its events are tried one by one... */
const BATCH_ATTEMPTS = 3;
/** ...pausing 100 ms, then 500 ms: long enough for a deadlock or a failover blip, short beside read-your-writes' wait. */
const RETRY_BASE_MS = 100;
const RETRY_GROWTH = 5;
/** How often a position passed without a transaction is stored all the same (see the runner). */
const PASSED_STORE_MS = 10_000;
/** Parked events retried per transaction (each holds the projection's checkpoint lock). */
const RETRY_CHUNK = 100;
/** How often a runner with paused projections reads the pauses again, in case an announcement went missing. */
const PAUSE_POLL_MS = 2_000;

const checkpointRow = z.object({ position_commit: z.string(), position_prepare: z.string() });
const positionOf = (row: z.infer<typeof checkpointRow>): Position => ({ commit: BigInt(row.position_commit), prepare: BigInt(row.position_prepare) });

/**
 * Creates the checkpoint row if needed and locks it for this transaction (the upsert takes the row
 * lock). Also says, in the same round trip, whether the projection has parked events and whether an
 * operator paused it (projections/operations.ts).
 */
async function lockCheckpoint(tx: DatabaseTransactionConnection, name: string): Promise<{ checkpoint: Position; hasParked: boolean; paused: boolean }> {
  const row = await tx.one(sql.type(checkpointRow.extend({ has_parked: z.boolean(), paused: z.boolean() }))`
    INSERT INTO projection_checkpoints (name) VALUES (${name})
    ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
    RETURNING position_commit::text, position_prepare::text,
      EXISTS (SELECT 1 FROM projection_parked_events WHERE projection = ${name}) AS has_parked,
      EXISTS (SELECT 1 FROM projection_pauses WHERE projection = ${name}) AS paused`);
  return { checkpoint: positionOf(row), hasParked: row.has_parked, paused: row.paused };
}

/** Moves the checkpoint and, when `notifyPeers`, announces it to other processes (delivered at commit), in one round trip. */
async function saveCheckpoint(tx: DatabaseTransactionConnection, name: string, position: Position, applied: number, notifyPeers: boolean) {
  await tx.query(sql.unsafe`
    WITH saved AS (
      UPDATE projection_checkpoints
      SET position_commit = ${position.commit.toString()}::bigint, position_prepare = ${position.prepare.toString()}::bigint,
          events_applied = events_applied + ${applied}, updated_at = now()
      WHERE name = ${name}
      RETURNING name)
    SELECT pg_notify(${CHECKPOINT_CHANNEL}, ${`${name} ${formatPosition(position)}`}) FROM saved WHERE ${notifyPeers}`);
}

/**
 * Stores a position the runner passed without applying anything (every event up to it was applied
 * or is of no interest to the projection): only forward, never below another runner's checkpoint.
 */
async function storePassedPosition(pool: DatabasePool, name: string, position: Position) {
  await pool.query(sql.unsafe`
    INSERT INTO projection_checkpoints AS c (name, position_commit, position_prepare)
    VALUES (${name}, ${position.commit.toString()}::bigint, ${position.prepare.toString()}::bigint)
    ON CONFLICT (name) DO UPDATE SET position_commit = EXCLUDED.position_commit, position_prepare = EXCLUDED.position_prepare, updated_at = now()
    WHERE (c.position_commit, c.position_prepare) < (EXCLUDED.position_commit, EXCLUDED.position_prepare)`);
}

/**
 * Applies one batch to a projection in the transaction that moves its checkpoint; events of streams
 * with a parked event are parked behind it, unapplied. Returns how many events it applied.
 * `notifyPeers`: announce the new checkpoint to other processes' waiters (this process's hear of it
 * from the runner).
 */
export async function applyBatch(pool: DatabasePool, projection: Projection, batch: RecordedEvent[], notifyPeers = true): Promise<number> {
  return (await applyBatchWith(pool, projection, batch, { notifyPeers, failedAttempts: null })).applied;
}

/**
 * `applyBatch` for a batch that failed `failedAttempts` times: each event is applied in its own
 * savepoint, and those that fail are parked (the later events of their streams behind them), all in
 * the transaction that moves the checkpoint past the batch, so every other event is applied once.
 */
export async function applyBatchParkingFailures(
  pool: DatabasePool,
  projection: Projection,
  batch: RecordedEvent[],
  options: { failedAttempts: number; notifyPeers?: boolean },
): Promise<{ applied: number; parked: SetAside[]; paused?: true }> {
  return applyBatchWith(pool, projection, batch, { notifyPeers: options.notifyPeers ?? true, failedAttempts: options.failedAttempts });
}

async function applyBatchWith(
  pool: DatabasePool,
  projection: Projection,
  batch: RecordedEvent[],
  options: { notifyPeers: boolean; failedAttempts: number | null },
): Promise<{ applied: number; parked: SetAside[]; paused?: true }> {
  return pool.transaction(async (tx) => {
    const { checkpoint, hasParked, paused } = await lockCheckpoint(tx, projection.name);
    // Paused: nothing applied and the checkpoint left where it is, so the runner resumes from it.
    if (paused) return { applied: 0, parked: [], paused: true };
    const fresh = batch.filter((event) => comparePositions(event.position, checkpoint) > 0);
    if (fresh.length === 0) return { applied: 0, parked: [] };
    const applied = projection.inline ? await appliedInline(tx, projection.name, fresh) : new Set<bigint>();
    const relevant = fresh.filter((event) => handlesEventType(projection, event.type) && !applied.has(event.position.commit));
    const waiting = hasParked ? await waitingStreams(tx, projection.name) : new Map<string, string>();
    const outcome = await applyInOrder(tx, projection, relevant, waiting, options.failedAttempts !== null);
    if (outcome.setAside.length > 0) await park(tx, projection.name, outcome.setAside, (options.failedAttempts ?? 0) + 1);
    await saveCheckpoint(tx, projection.name, fresh[fresh.length - 1]!.position, outcome.applied, options.notifyPeers);
    return { applied: outcome.applied, parked: outcome.setAside };
  });
}

/**
 * The transactions among `events`' that applied their events to this (inline) projection themselves
 * (src/event-store/postgres.ts). The records of those the checkpoint passes for good in this
 * transaction are deleted; the last one's stays, its events may go on in the next batch.
 */
async function appliedInline(tx: DatabaseTransactionConnection, name: string, events: RecordedEvent[]): Promise<Set<bigint>> {
  const transactions = [...new Set(events.map((event) => event.position.commit.toString()))];
  const last = events[events.length - 1]!.position.commit.toString();
  const rows = await tx.anyFirst(sql.type(z.object({ transaction_id: z.string() }))`
    WITH applied AS (
      SELECT transaction_id FROM projection_inline_transactions WHERE projection = ${name} AND transaction_id = ANY(${sql.array(transactions, 'int8')}::bigint[])),
    passed AS (
      DELETE FROM projection_inline_transactions WHERE projection = ${name} AND transaction_id IN (SELECT transaction_id FROM applied) AND transaction_id < ${last}::bigint)
    SELECT transaction_id::text FROM applied`);
  return new Set(rows.map(BigInt));
}

/**
 * Applies `events` (all of the projection's types) in order within `tx`, keeping each stream's order:
 * an event of a stream in `waiting` (stream -> the parked event it waits behind) is set aside behind
 * it. With `isolate`, each event is applied in its own savepoint, and one that fails is set aside with
 * its error (and its stream joins `waiting`) instead of failing the rest. Errors that say nothing
 * about the event (a lost connection, a deadlock, a shutdown) are thrown, never set aside.
 */
export async function applyInOrder(
  tx: DatabaseTransactionConnection,
  projection: Projection,
  events: RecordedEvent[],
  waiting: Map<string, string>,
  isolate: boolean,
): Promise<{ applied: number; setAside: SetAside[] }> {
  const setAside: SetAside[] = [];
  const ready: RecordedEvent[] = [];
  let applied = 0;
  for (const event of events) {
    const behind = waiting.get(event.streamName);
    if (behind) setAside.push({ event, error: waitingBehind(behind), behind });
    else if (!isolate) ready.push(event);
    else {
      try {
        await tx.transaction((savepoint) => projection.apply(savepoint, [event]));
        applied += 1;
      } catch (error) {
        if (isTransient(error)) throw error;
        setAside.push({ event, error: describeError(error), behind: null });
        waiting.set(event.streamName, event.eventId);
      }
    }
  }
  if (ready.length > 0) {
    await projection.apply(tx, ready);
    applied += ready.length;
  }
  return { applied, setAside };
}

/**
 * For a replay (rebuild) inside its own transaction: applies `events` together in a savepoint and,
 * should that fail, one by one as `applyBatchParkingFailures` does. The caller keeps `waiting` across
 * batches and parks what is set aside.
 */
export async function applyReplayParkingFailures(
  tx: DatabaseTransactionConnection,
  projection: Projection,
  events: RecordedEvent[],
  waiting: Map<string, string>,
): Promise<{ applied: number; setAside: SetAside[] }> {
  try {
    return await tx.transaction((savepoint) => applyInOrder(savepoint, projection, events, waiting, false));
  } catch (error) {
    if (isTransient(error)) throw error;
    return applyInOrder(tx, projection, events, waiting, true);
  }
}

/** SQLSTATE classes that say nothing about the event: connection (08), transaction rollback such as deadlocks (40), resources (53), shutdown (57P). */
const TRANSIENT_SQLSTATE = /^(08|40|53|57P)/;

export function isTransient(error: unknown): boolean {
  let cause: unknown = error;
  // A few causes deep at most: a chain may loop.
  for (let depth = 0; depth < 4 && cause instanceof Error; depth++, cause = cause.cause) {
    if (cause instanceof ConnectionError || cause instanceof BackendTerminatedError) return true;
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_SQLSTATE.test(code)) return true;
  }
  return false;
}

/**
 * Applies a projection's parked events again, in global order (after a fix to the projection or the
 * data): those that apply now leave the table; those that fail again stay, their attempts counted, and
 * so do the later events of their streams. Each chunk holds the checkpoint lock, so the live runner
 * cannot apply an event of the same stream meanwhile.
 */
export async function retryParkedEvents(deps: { pool: DatabasePool; eventStore: EventStore; projection: Projection; streamName?: string }): Promise<{ applied: number; stillParked: number }> {
  const { pool, eventStore, projection } = deps;
  const waiting = new Map<string, string>();
  let after: Position = START;
  let applied = 0;
  let stillParked = 0;
  for (let done = false; !done; ) {
    done = await pool.transaction(async (tx) => {
      await lockCheckpoint(tx, projection.name);
      const rows = await listParked(tx, { projection: projection.name, after, limit: RETRY_CHUNK, ...(deps.streamName ? { streamName: deps.streamName } : {}) });
      for (const row of rows) {
        after = { commit: BigInt(row.position_commit), prepare: BigInt(row.position_prepare) };
        const behind = waiting.get(row.stream_name);
        if (behind) {
          stillParked += 1;
          await recordRetry(tx, projection.name, row.event_id, { error: waitingBehind(behind), tried: false });
          continue;
        }
        try {
          const [event] = (await eventStore.readStream(row.stream_name, { fromRevision: BigInt(row.stream_revision) })).filter((e) => e.eventId === row.event_id);
          if (!event) throw new Error(`event ${row.event_id} is no longer at ${row.stream_name}#${row.stream_revision} in the event store`);
          await tx.transaction((savepoint) => projection.apply(savepoint, [event]));
          await unpark(tx, projection.name, row.event_id);
          applied += 1;
        } catch (error) {
          if (isTransient(error)) throw error;
          await recordRetry(tx, projection.name, row.event_id, { error: describeError(error), tried: true });
          waiting.set(row.stream_name, row.event_id);
          stillParked += 1;
        }
      }
      return rows.length < RETRY_CHUNK;
    });
  }
  return { applied, stillParked };
}

export async function readCheckpoint(pool: DatabasePool, name: string): Promise<Position> {
  const row = await pool.maybeOne(sql.type(checkpointRow)`
    SELECT position_commit::text, position_prepare::text FROM projection_checkpoints WHERE name = ${name}`);
  return row ? positionOf(row) : START;
}

export type ProjectionRunner = { stop(): Promise<void> };

type RunnerDeps = {
  pool: DatabasePool;
  eventStore: EventStore;
  notifications: Notifications;
  projections: Projection[];
  onError: (projection: string, error: unknown) => void;
  /** An event set aside: it failed alone after the batch's attempts, or waits behind one that did. */
  onParked?: (projection: string, parked: SetAside) => void;
  /**
   * Batch transactions applied at once across this runner's projections (each holds a connection of
   * `pool`): fewer than the pool has, so that the process's queries keep connections while every read
   * model catches up at once (a 10,000-row upload's events).
   */
  maxConcurrentBatches: number;
};

/**
 * Gives each projection a subscription from its checkpoint, except those an operator paused
 * (projections/operations.ts): a pause stops the subscription (announced by NOTIFY, or found in a
 * batch's transaction, which then applies nothing), a resume subscribes again from the checkpoint.
 */
export async function startProjectionRunner(deps: RunnerDeps): Promise<ProjectionRunner> {
  const announcePassed = createPassedAnnouncer(deps.pool, deps.notifications);
  const batchSlot = pLimit(deps.maxConcurrentBatches);
  const runs = new Map(deps.projections.map((projection) => [projection.name, projectionRun(deps, projection, announcePassed, batchSlot)]));
  const control = (name: string, paused: boolean) => {
    const run = runs.get(name);
    if (run) void run.setPaused(paused).catch((error: unknown) => deps.onError(name, error));
  };
  // Listening before the pauses are read: a pause or resume in between is heard, not missed.
  const unlisten = await deps.notifications.listen(CONTROL_CHANNEL, (payload) => {
    const parsed = parseControl(payload);
    if (parsed) control(parsed.projection, parsed.paused);
  });
  const reconcile = async () => {
    const paused = await pausedProjections(deps.pool);
    await Promise.all([...runs.values()].map((run) => run.setPaused(paused.has(run.name)).catch((error: unknown) => deps.onError(run.name, error))));
  };
  await reconcile();
  // Announcements can go missing (a dropped listening connection): while anything is paused or not
  // subscribed, the pauses are read again now and then.
  const poll = setInterval(() => {
    if ([...runs.values()].some((run) => !run.running())) void reconcile().catch(() => {});
  }, PAUSE_POLL_MS);
  poll.unref();
  return {
    stop: async () => {
      clearInterval(poll);
      unlisten();
      await Promise.all([...runs.values()].map((run) => run.stop()));
    },
  };
}

/** One projection's subscription, stopped while the projection is paused. */
function projectionRun(deps: RunnerDeps, projection: Projection, announcePassed: ReturnType<typeof createPassedAnnouncer>, batchSlot: LimitFunction) {
  const { notifications } = deps;
  let subscription: Subscription | null = null;
  let paused = false;
  let closed = false;
  let stopping: Promise<void> = Promise.resolve();
  const unsubscribe = () => {
    const current = subscription;
    subscription = null;
    if (current) stopping = stopping.then(() => current.stop());
    return stopping;
  };
  const subscribe = async () => {
    await stopping;
    if (subscription || paused || closed) return;
    const after = await readCheckpoint(deps.pool, projection.name);
    if (subscription || paused || closed) return;
    let storedAt = performance.now();
    subscription = deps.eventStore.subscribeToAll({ after, batchWindowMs: projection.batchWindowMs, onError: (error) => deps.onError(projection.name, error) }, async (batch) => {
      // Paused meanwhile: this subscription is stopping, and the next one starts from the stored checkpoint.
      if (paused) return;
      const end = batch[batch.length - 1]!.position;
      // A batch with nothing for this projection costs no transaction: the stored checkpoint moves with
      // the next relevant batch (after a restart the skipped events are read and skipped again), and
      // commands waiting for this projection learn the new position from the announcement alone. It
      // is stored anyway every PASSED_STORE_MS, so that operators' counts of pending events (status,
      // readiness) start from a recent position instead of scanning what was skipped since.
      if (!batch.some((event) => handlesEventType(projection, event.type))) {
        await announcePassed(projection.name, end);
        if (performance.now() - storedAt >= PASSED_STORE_MS) {
          storedAt = performance.now();
          await storePassedPosition(deps.pool, projection.name, end);
        }
        return;
      }
      if (await batchSlot(() => inBatchSpan(projection, batch, () => applyRetryingThenParking(deps, projection, batch, notifications.peersListening())))) {
        paused = true;
        void unsubscribe();
        return;
      }
      storedAt = performance.now();
      // Committed: this process's waiters hear of it now, not after a NOTIFY round trip. (Had another
      // runner got further already, the stored checkpoint is past `end` too.)
      notifications.publishLocally(CHECKPOINT_CHANNEL, `${projection.name} ${formatPosition(end)}`);
    });
  };
  return {
    name: projection.name,
    /** Subscribed, or paused as it should be. */
    running: () => paused || subscription !== null,
    async setPaused(value: boolean) {
      paused = value;
      if (value) await unsubscribe();
      else await subscribe();
    },
    async stop() {
      closed = true;
      await unsubscribe();
    },
  };
}

/**
 * A batch's span joins the trace of its first event that carries one (a batch is most often one
 * command's events) and links the others' traces.
 */
function inBatchSpan<T>(projection: Projection, batch: RecordedEvent[], apply: () => Promise<T>): Promise<T> {
  // Switched off, a batch pays for no scan of its events' trace contexts.
  if (!tracingEnabled()) return apply();
  const relevant = batch.filter((event) => handlesEventType(projection, event.type));
  const [parent, ...others] = [...new Map(relevant.flatMap((event) => {
    const carried = traceContextOf(event.metadata);
    return carried ? [[carried.traceparent, carried] as const] : [];
  })).values()];
  return inSpan(`projection ${projection.name}`, { parent: parent ?? null, links: others, attributes: { 'projection.name': projection.name, 'projection.events': relevant.length } }, apply);
}

/**
 * Tries the batch BATCH_ATTEMPTS times with growing pauses, then event by event, parking those that
 * fail. A transient error during that last pass (the database gone) is thrown: the subscription offers
 * the batch again later, and nothing is parked for it. Returns true when the projection turned out
 * to be paused (nothing applied).
 */
async function applyRetryingThenParking(
  deps: Pick<RunnerDeps, 'pool' | 'onError' | 'onParked'>,
  projection: Projection,
  batch: RecordedEvent[],
  notifyPeers: boolean,
): Promise<boolean> {
  const report = (result: { parked: SetAside[]; paused?: true }) => {
    for (const setAside of result.parked) deps.onParked?.(projection.name, setAside);
    return result.paused === true;
  };
  for (let attempt = 1; attempt <= BATCH_ATTEMPTS; attempt++) {
    try {
      return report(await applyBatchWith(deps.pool, projection, batch, { notifyPeers, failedAttempts: null }));
    } catch (error) {
      deps.onError(projection.name, error);
      if (attempt < BATCH_ATTEMPTS) await pause(RETRY_BASE_MS * RETRY_GROWTH ** (attempt - 1));
    }
  }
  return report(await applyBatchParkingFailures(deps.pool, projection, batch, { failedAttempts: BATCH_ATTEMPTS, notifyPeers }));
}

/**
 * Announces positions that projections passed without a transaction: to this process at once, and to
 * other processes, if any listen, by a NOTIFY that announcements made in the same turn of the event
 * loop (every projection skipping the same batch) share, one line each.
 */
function createPassedAnnouncer(pool: DatabasePool, notifications: Notifications) {
  let pending: { lines: string[]; sent: Promise<void> } | null = null;
  return async (name: string, position: Position): Promise<void> => {
    const line = `${name} ${formatPosition(position)}`;
    notifications.publishLocally(CHECKPOINT_CHANNEL, line);
    if (!notifications.peersListening()) return;
    if (!pending) {
      const batch: { lines: string[]; sent: Promise<void> } = { lines: [], sent: Promise.resolve() };
      batch.sent = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        pending = null;
        await pool.query(sql.unsafe`SELECT pg_notify(${CHECKPOINT_CHANNEL}, ${batch.lines.join('\n')})`);
      });
      pending = batch;
    }
    pending.lines.push(line);
    return pending.sent;
  };
}

/**
 * Read-your-writes: resolves when every projection in `names` has passed `position`, or after
 * `timeoutMs` (the write is durable either way; only the read model is late). Learns checkpoints from
 * NOTIFY so waiting costs no polling. A paused projection is not waited for (it would only hold every
 * command for the whole timeout): its read model is stale until it is resumed.
 */
export function createProjectionWaiter(deps: {
  pool: DatabasePool;
  notifications: Notifications;
  names: string[];
  timeoutMs: number;
}) {
  // Every checkpoint move is announced, so once a projection's checkpoint is known, announcements keep
  // it current. The table is read the first time, and, in case announcements went missing (a runner
  // elsewhere that had not yet heard of this process, a dropped listening connection), every
  // WAITER_POLL_MS while any wait lasts: one read for all waiters. A known checkpoint is never ahead of
  // the stored one (checkpoints only move forward), so a missed announcement can only delay a wait.
  const known = new Map<string, Position>();
  const paused = new Set<string>();
  let pausesRead = false;
  const waiters = new Set<() => void>();
  /** Every projection some wait has named: what a poll reads. */
  const waitedFor = new Set(deps.names);
  const learn = (name: string, position: Position) => {
    const previous = known.get(name);
    if (!previous || comparePositions(position, previous) > 0) known.set(name, position);
  };
  const refresh = async (names: readonly string[]) => {
    const pauses = await pausedProjections(deps.pool);
    paused.clear();
    for (const name of pauses.keys()) paused.add(name);
    pausesRead = true;
    for (const row of await deps.pool.any(sql.type(checkpointRow.extend({ name: z.string() }))`
      SELECT name, position_commit::text, position_prepare::text FROM projection_checkpoints WHERE name = ANY(${sql.array([...names], 'text')})`)) {
      learn(row.name, positionOf(row));
    }
  };
  const wakeWaiters = () => {
    for (const wake of waiters) wake();
  };
  let polling: NodeJS.Timeout | null = null;
  const pollWhileWaiting = () => {
    if (polling || waiters.size === 0) return;
    polling = setTimeout(() => {
      void refresh([...waitedFor])
        .then(wakeWaiters, () => {})
        .finally(() => {
          polling = null;
          pollWhileWaiting();
        });
    }, WAITER_POLL_MS);
    polling.unref();
  };
  // A payload is one line `<projection> <commit/prepare>` per projection that has passed a position.
  const listening = deps.notifications.listen(CHECKPOINT_CHANNEL, (payload) => {
    for (const line of payload.split('\n')) {
      const [name, position] = line.split(' ');
      if (name && position) learn(name, parsePosition(position));
    }
    wakeWaiters();
  });
  const listeningToControl = deps.notifications.listen(CONTROL_CHANNEL, (payload) => {
    const control = parseControl(payload);
    if (!control) return;
    if (control.paused) paused.add(control.projection);
    else paused.delete(control.projection);
    wakeWaiters();
  });
  const caughtUp = (position: Position, names: readonly string[]) =>
    names.every((name) => {
      if (paused.has(name)) return true;
      const checkpoint = known.get(name);
      return checkpoint !== undefined && comparePositions(checkpoint, position) >= 0;
    });

  /** `names` narrows the wait to some of the projections (default: all of `deps.names`). */
  return async function waitForProjections(position: Position, names: readonly string[] = deps.names): Promise<boolean> {
    if (names.length === 0) return true;
    for (const name of names) waitedFor.add(name);
    await Promise.all([listening, listeningToControl]);
    if (pausesRead && caughtUp(position, names)) return true;
    const unknown = names.filter((name) => !known.has(name));
    if (unknown.length > 0 || !pausesRead) {
      await refresh(unknown);
      if (caughtUp(position, names)) return true;
    }
    return new Promise<boolean>((resolve) => {
      const done = (result: boolean) => {
        clearTimeout(timer);
        waiters.delete(check);
        resolve(result);
      };
      const check = () => caughtUp(position, names) && done(true);
      const timer = setTimeout(() => done(false), deps.timeoutMs);
      waiters.add(check);
      check(); // a notification may have landed during the refresh above
      pollWhileWaiting();
    });
  };
}
