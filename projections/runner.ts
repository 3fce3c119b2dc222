// Runs projections: each follows the global event order from its checkpoint and applies batches in
// one transaction with its checkpoint. Several runner processes may run the same projection safely:
// the checkpoint row is locked per batch and events at or below it are skipped.
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
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
import type { Projection } from '../src/event-store/projection.ts';

export const CHECKPOINT_CHANNEL = 'projection_checkpoint';
const WAITER_POLL_MS = 250;

const checkpointRow = z.object({ position_commit: z.string(), position_prepare: z.string() });
const positionOf = (row: z.infer<typeof checkpointRow>): Position => ({ commit: BigInt(row.position_commit), prepare: BigInt(row.position_prepare) });

/** Creates the checkpoint row if needed and locks it for this transaction (the upsert takes the row lock). */
async function lockCheckpoint(tx: DatabaseTransactionConnection, name: string): Promise<Position> {
  const row = await tx.one(sql.type(checkpointRow)`
    INSERT INTO projection_checkpoints (name) VALUES (${name})
    ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
    RETURNING position_commit::text, position_prepare::text`);
  return positionOf(row);
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
 * Applies one batch to a projection in the transaction that moves its checkpoint. `notifyPeers`:
 * announce the new checkpoint to other processes' waiters (this process's hear of it from the runner).
 */
export async function applyBatch(pool: DatabasePool, projection: Projection, batch: RecordedEvent[], notifyPeers = true): Promise<number> {
  return pool.transaction(async (tx) => {
    const checkpoint = await lockCheckpoint(tx, projection.name);
    const fresh = batch.filter((event) => comparePositions(event.position, checkpoint) > 0);
    if (fresh.length === 0) return 0;
    const relevant = fresh.filter((event) => projection.eventTypes.includes(event.type));
    if (relevant.length > 0) await projection.apply(tx, relevant);
    await saveCheckpoint(tx, projection.name, fresh[fresh.length - 1]!.position, relevant.length, notifyPeers);
    return relevant.length;
  });
}

export async function readCheckpoint(pool: DatabasePool, name: string): Promise<Position> {
  const row = await pool.maybeOne(sql.type(checkpointRow)`
    SELECT position_commit::text, position_prepare::text FROM projection_checkpoints WHERE name = ${name}`);
  return row ? positionOf(row) : START;
}

export type ProjectionRunner = { stop(): Promise<void> };

export async function startProjectionRunner(deps: {
  pool: DatabasePool;
  eventStore: EventStore;
  notifications: Notifications;
  projections: Projection[];
  onError: (projection: string, error: unknown) => void;
}): Promise<ProjectionRunner> {
  const { notifications } = deps;
  const subscriptions: Subscription[] = [];
  const announcePassed = createPassedAnnouncer(deps.pool, notifications);
  for (const projection of deps.projections) {
    const after = await readCheckpoint(deps.pool, projection.name);
    subscriptions.push(
      deps.eventStore.subscribeToAll({ after, onError: (error) => deps.onError(projection.name, error) }, async (batch) => {
        const end = batch[batch.length - 1]!.position;
        // A batch with nothing for this projection costs no transaction: the stored checkpoint moves with
        // the next relevant batch (after a restart the skipped events are read and skipped again), and
        // commands waiting for this projection learn the new position from the announcement alone.
        if (!batch.some((event) => projection.eventTypes.includes(event.type))) {
          await announcePassed(projection.name, end);
          return;
        }
        await applyBatch(deps.pool, projection, batch, notifications.peersListening());
        // Committed: this process's waiters hear of it now, not after a NOTIFY round trip. (Had another
        // runner got further already, the stored checkpoint is past `end` too.)
        notifications.publishLocally(CHECKPOINT_CHANNEL, `${projection.name} ${formatPosition(end)}`);
      }),
    );
  }
  return { stop: async () => void (await Promise.all(subscriptions.map((s) => s.stop()))) };
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
 * NOTIFY so waiting costs no polling.
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
  const waiters = new Set<() => void>();
  /** Every projection some wait has named: what a poll reads. */
  const waitedFor = new Set(deps.names);
  const learn = (name: string, position: Position) => {
    const previous = known.get(name);
    if (!previous || comparePositions(position, previous) > 0) known.set(name, position);
  };
  const refresh = async (names: readonly string[]) => {
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
  const caughtUp = (position: Position, names: readonly string[]) =>
    names.every((name) => {
      const checkpoint = known.get(name);
      return checkpoint !== undefined && comparePositions(checkpoint, position) >= 0;
    });

  /** `names` narrows the wait to some of the projections (default: all of `deps.names`). */
  return async function waitForProjections(position: Position, names: readonly string[] = deps.names): Promise<boolean> {
    if (names.length === 0) return true;
    for (const name of names) waitedFor.add(name);
    await listening;
    if (caughtUp(position, names)) return true;
    const unknown = names.filter((name) => !known.has(name));
    if (unknown.length > 0) {
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
