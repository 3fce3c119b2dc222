// Rebuilds a projection from the first event into fresh tables in a side schema, then swaps them in
// within one short transaction, so queries see the old model until the new one is complete: never an
// empty or half-built one. The live runner keeps going meanwhile; only the swap locks its checkpoint.
//
// Nothing here holds a transaction open for long: event readers only see events below the oldest
// running writing transaction of the cluster (see the Postgres event store), so one long rebuild
// transaction would stop every live projection, and every command waiting for one. Each batch is its
// own short transaction that also saves the rebuild's checkpoint (`projection_rebuilds`), which is
// also what lets a rebuild that stopped resume where it was.
//
// An event the projection cannot apply is parked, as by the live runner, not fatal to the rebuild:
// under the rebuild's own parking name, in the transaction of the batch that met it (so a resumed
// rebuild finds its verdict so far); the swap makes that verdict the projection's.
import { hostname } from 'node:os';
import pg from 'pg';
import { sql, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { START, type EventStore, type Position, type RecordedEvent } from '../src/event-store/port.ts';
import type { Database } from '../src/db/pools.ts';
import { handlesEventType, type Projection } from '../src/event-store/projection.ts';
import { park, promoteRebuildParked, rebuildParkingName, waitingStreams } from './parking.ts';
import { applyInOrder, applyReplayParkingFailures, isTransient } from './runner.ts';

/** Events read per page (reading holds back nobody: it runs outside any transaction). */
export const REBUILD_PAGE = 10_000;
/**
 * Events applied per batch transaction. Each one holds back every event reader, so every live
 * projection and every command waiting for one, while it writes. Smaller batches hold readers back
 * hardly less on a loaded machine (their round trips, not their rows, then dominate) and cost throughput.
 */
export const REBUILD_BATCH = 1_000;
/** The swap waits at most this long for a lock (queries reading the live tables queue behind it meanwhile)... */
const SWAP_LOCK_TIMEOUT_MS = 200;
/** ...and tries this many times, catching up between attempts, before giving up (the rebuild stays resumable). */
const SWAP_ATTEMPTS = 25;
/** First key of the advisory lock a rebuild holds (the second is the projection's name hashed). */
const REBUILD_LOCK_NAMESPACE = 7_240_010;

export class RebuildAlreadyRunningError extends Error {}

/** `read`: events read so far, of every type (what a progress bar counts), those before a resumed rebuild's checkpoint included. */
export type RebuildProgress = (progress: { applied: number; read: number; position: Position }) => void;

const savedRebuild = z.object({ position_commit: z.string(), position_prepare: z.string(), events_applied: z.string(), schema_present: z.boolean() });
const runningRebuild = z.object({ owner: z.string(), started_at: z.date(), updated_at: z.date() });
const constraintRow = z.object({ name: z.string(), definition: z.string() });
const indexRow = z.object({ name: z.string(), definition: z.string(), unique: z.boolean() });

/**
 * Rebuilds `projection`, resuming a rebuild of it that stopped (crash, failed batch, lost connection)
 * from its checkpoint unless `restart` says to start afresh. Refuses, with RebuildAlreadyRunningError,
 * while another process rebuilds the same projection.
 */
export async function rebuildProjection(deps: {
  db: Database;
  eventStore: EventStore;
  projection: Projection;
  restart?: boolean;
  onProgress?: RebuildProgress;
}): Promise<{ eventsApplied: number; parked: number; position: Position; resumedFrom: Position | null }> {
  const { db, eventStore, projection } = deps;
  if (projection.rebuildable === false) throw new Error(`Projection ${projection.name} cannot be rebuilt: replaying it would repeat its effects`);
  const schema = `rebuild_${projection.name.replaceAll('-', '_')}`;

  // One rebuild per projection at a time: a session advisory lock on a connection of its own, which
  // the server drops the moment this process dies (so a crashed rebuild can be resumed at once). A
  // lock outside any transaction holds back no event reader.
  const lock = new pg.Client({ connectionString: db.connectionUri, application_name: `projection-rebuild ${projection.name}` });
  let lockLost: Error | null = null;
  lock.on('error', (error) => void (lockLost = error));
  await lock.connect();
  try {
    const { rows } = await lock.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [REBUILD_LOCK_NAMESPACE, projection.name]);
    if (!rows[0]!.locked) {
      const row = (await lock.query('SELECT owner, started_at, updated_at FROM projection_rebuilds WHERE projection = $1', [projection.name])).rows[0];
      const running = row ? runningRebuild.parse(row) : null;
      const who = running ? ` (by ${running.owner}, started ${running.started_at.toISOString()}, last batch ${running.updated_at.toISOString()})` : '';
      throw new RebuildAlreadyRunningError(`A rebuild of ${projection.name} is already running${who}; wait for it to finish.`);
    }
    const owner = `${hostname()} pid ${process.pid}`;
    const saved = deps.restart ? null : await resumableRebuild(lock, projection.name, owner);
    if (!saved) await createSideTables(lock, projection, schema, owner);

    const resumedFrom = saved?.position ?? null;
    let position = saved?.position ?? START;
    let applied = saved?.applied ?? 0;
    let read = saved ? (await eventStore.countEventsAfter(START)) - (await eventStore.countEventsAfter(saved.position)) : 0;
    // Streams with a parked event (stream -> that event): their later events are parked behind it.
    let waiting: ReadonlyMap<string, string> = saved ? await waitingStreams(db.slonik, rebuildParkingName(projection.name)) : new Map<string, string>();
    const readPage = (after: Position, maxCount = REBUILD_PAGE) => eventStore.readAll({ after, maxCount });

    /**
     * Writes one batch into the side tables with the rebuild's checkpoint, in a transaction of its own:
     * first all of it together (the projection's set-based statements); should that fail for a reason
     * that is the events', once more event by event in savepoints, parking what fails alone. Committed
     * asynchronously: a crash can lose the last batches written, but only with their checkpoint, so the
     * resumed rebuild writes them again (the swap's commit, synchronous, makes everything before it durable).
     */
    const writeBatch = (batch: RecordedEvent[], oneByOne: boolean) =>
      db.slonik.transaction(async (tx) => {
        await tx.query(sql.unsafe`SELECT set_config('search_path', ${`${schema}, public`}, true), set_config('synchronous_commit', 'off', true)`);
        const result = await applyIntoSideTables(tx, projection, batch, waiting, oneByOne ? 'one by one' : 'together');
        const end = batch[batch.length - 1]!.position;
        await tx.query(sql.unsafe`
          UPDATE public.projection_rebuilds
          SET position_commit = ${end.commit.toString()}::bigint, position_prepare = ${end.prepare.toString()}::bigint,
              events_applied = events_applied + ${result.applied}, updated_at = now()
          WHERE projection = ${projection.name}`);
        return result;
      });

    /**
     * Applies every visible event after `position` into the side tables, a batch per page. The next
     * page is read while a batch is written, so Postgres reads events as it writes rows; pages of
     * REBUILD_BATCH events keep short the parse of one that may land while a batch is open (it delays
     * the batch's commit, and so every event reader: 10,000-event pages parsed on a loaded machine
     * held 1,000-event batches open 1 to 2 s, measured).
     */
    const catchUp = async () => {
      let next = readPage(position, REBUILD_BATCH);
      for (;;) {
        const batch = await next;
        if (batch.length === 0) return;
        const end = batch[batch.length - 1]!.position;
        next = batch.length === REBUILD_BATCH ? readPage(end, REBUILD_BATCH) : Promise.resolve([]);
        next.catch(() => {}); // awaited in the next turn, unless this batch fails first
        if (lockLost) throw new Error(`Rebuild of ${projection.name} stopped: its lock connection failed (${lockLost.message}); run it again to resume.`);
        const done = await writeBatch(batch, false).catch((error: unknown) => {
          if (isTransient(error)) throw error;
          return writeBatch(batch, true);
        });
        position = end;
        applied += done.applied;
        waiting = done.waiting;
        read += batch.length;
        deps.onProgress?.({ applied, read, position });
      }
    };

    await catchUp();
    // Plain indexes are built once the bulk is in, which is much cheaper than maintaining them row by
    // row. CONCURRENTLY, because a plain CREATE INDEX holds back every event reader while it builds.
    for (const { name, definition } of await missingPlainIndexes(lock, projection, schema)) {
      await lock.query(`DROP INDEX IF EXISTS ${schema}.${name}`); // left invalid by a build that failed
      await lock.query(definition.replace(/^CREATE INDEX /, 'CREATE INDEX CONCURRENTLY '));
    }
    await catchUp();

    // The swap: holding the live checkpoint's lock, apply what came since the last batch, swap the
    // tables in and move the live checkpoint. Short, and bounded: it waits for locks at most
    // SWAP_LOCK_TIMEOUT_MS (a long query on a live table), then catches up and tries again.
    for (let attempt = 1; ; attempt++) {
      try {
        const swapped = await db.slonik.transaction(async (tx) => {
          await tx.query(sql.unsafe`SELECT set_config('lock_timeout', ${`${SWAP_LOCK_TIMEOUT_MS}ms`}, true), set_config('search_path', ${`${schema}, public`}, true)`);
          await tx.query(sql.unsafe`INSERT INTO projection_checkpoints (name) VALUES (${projection.name}) ON CONFLICT DO NOTHING`);
          await tx.query(sql.unsafe`SELECT 1 FROM projection_checkpoints WHERE name = ${projection.name} FOR UPDATE`);
          let end = position;
          let tail = 0;
          let tailRead = 0;
          let tailWaiting = waiting;
          for (;;) {
            const page = await readPage(end);
            if (page.length === 0) break;
            const result = await applyIntoSideTables(tx, projection, page, tailWaiting, 'in a savepoint, then one by one');
            tail += result.applied;
            tailWaiting = result.waiting;
            tailRead += page.length;
            end = page[page.length - 1]!.position;
            if (page.length < REBUILD_PAGE) break;
          }
          await tx.query(sql.unsafe`SELECT set_config('search_path', 'public', true)`);
          for (const table of projection.tables) {
            await tx.query(sql.unsafe`DROP TABLE ${sql.identifier(['public', table])}`);
            await tx.query(sql.unsafe`ALTER TABLE ${sql.identifier([schema, table])} SET SCHEMA public`);
          }
          await tx.query(sql.unsafe`DROP SCHEMA ${sql.identifier([schema])}`);
          const parked = await promoteRebuildParked(tx, projection.name);
          await tx.query(sql.unsafe`DELETE FROM projection_rebuilds WHERE projection = ${projection.name}`);
          // Appends applied inline wrote to the tables just dropped: those up to `end` are replayed, the
          // runner applies those after it to these tables.
          await tx.query(sql.unsafe`DELETE FROM projection_inline_transactions WHERE projection = ${projection.name}`);
          await tx.query(sql.unsafe`
            UPDATE projection_checkpoints
            -- Nothing visible to the live runner is beyond this: the final catch-up read under its lock.
            SET position_commit = ${end.commit.toString()}::bigint, position_prepare = ${end.prepare.toString()}::bigint,
                events_applied = ${applied + tail}, updated_at = now(), rebuilt_at = now()
            WHERE name = ${projection.name}`);
          return { end, tail, tailRead, parked };
        });
        position = swapped.end;
        applied += swapped.tail;
        read += swapped.tailRead;
        if (swapped.tailRead > 0) deps.onProgress?.({ applied, read, position });
        return { eventsApplied: applied, parked: swapped.parked, position, resumedFrom };
      } catch (error) {
        if (postgresCode(error) !== LOCK_NOT_AVAILABLE || attempt >= SWAP_ATTEMPTS) throw error;
        await catchUp();
      }
    }
  } finally {
    // Closing the connection releases the lock.
    await lock.end().catch(() => {});
  }
}

/**
 * Applies the events of the projection's types (the side schema first on search_path), parking under
 * the rebuild's name those it cannot apply and the later events of streams with a parked event
 * (`waiting`: stream -> that event): all `together` (any failure fails the transaction), `one by one`
 * in savepoints, or `in a savepoint, then one by one` should that fail. Returns how many it applied,
 * and `waiting` as it is after them: a new map, which the caller keeps only once `tx` has committed
 * (a transaction that rolls back, or is retried, parked nothing).
 */
async function applyIntoSideTables(
  tx: DatabaseTransactionConnection,
  projection: Projection,
  page: RecordedEvent[],
  waiting: ReadonlyMap<string, string>,
  how: 'together' | 'one by one' | 'in a savepoint, then one by one',
): Promise<{ applied: number; waiting: ReadonlyMap<string, string> }> {
  const relevant = page.filter((event) => handlesEventType(projection, event.type));
  if (relevant.length === 0) return { applied: 0, waiting };
  const after = new Map(waiting);
  const { applied, setAside } =
    how === 'in a savepoint, then one by one'
      ? await applyReplayParkingFailures(tx, projection, relevant, after)
      : await applyInOrder(tx, projection, relevant, after, how === 'one by one');
  if (setAside.length > 0) await park(tx, rebuildParkingName(projection.name), setAside, 1);
  return { applied, waiting: after };
}

/** The checkpoint of a rebuild that stopped, if its side tables are still there; claims it for `owner`. */
async function resumableRebuild(lock: pg.Client, name: string, owner: string): Promise<{ position: Position; applied: number } | null> {
  const { rows } = await lock.query(
    `UPDATE projection_rebuilds SET owner = $2, updated_at = now() WHERE projection = $1
     RETURNING position_commit::text, position_prepare::text, events_applied::text, to_regnamespace(schema_name) IS NOT NULL AS schema_present`,
    [name, owner],
  );
  if (rows.length === 0) return null;
  const saved = savedRebuild.parse(rows[0]);
  if (!saved.schema_present) return null;
  return { position: { commit: BigInt(saved.position_commit), prepare: BigInt(saved.position_prepare) }, applied: Number(saved.events_applied) };
}

/**
 * Creates the side schema afresh, with tables that have the live ones' columns, defaults, constraints
 * and unique indexes (updates by key and ON CONFLICT need them during the replay), and the rebuild's
 * checkpoint at the start with none of its events parked, in one transaction. Every name is kept, so
 * after the swap the tables look exactly as the migrations made them. Postgres wrote the DDL text (pg_get_constraintdef,
 * pg_get_indexdef) around our own schema and table names; nothing from a request reaches it.
 */
async function createSideTables(lock: pg.Client, projection: Projection, schema: string, owner: string): Promise<void> {
  await lock.query('BEGIN');
  try {
    await lock.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await lock.query(`CREATE SCHEMA ${schema}`);
    for (const table of projection.tables) {
      await lock.query(`CREATE TABLE ${schema}.${table} (LIKE public.${table} INCLUDING ALL EXCLUDING INDEXES)`);
      const constraints = await lock.query(
        `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
         WHERE conrelid = $1::regclass AND contype IN ('p', 'u', 'x')`,
        [`public.${table}`],
      );
      for (const { name, definition } of z.array(constraintRow).parse(constraints.rows)) {
        await lock.query(`ALTER TABLE ${schema}.${table} ADD CONSTRAINT ${name} ${definition}`);
      }
      for (const { definition } of (await liveIndexes(lock, schema, table)).filter((index) => index.unique)) await lock.query(definition);
    }
    await lock.query('DELETE FROM projection_parked_events WHERE projection = $1', [rebuildParkingName(projection.name)]);
    await lock.query(
      `INSERT INTO projection_rebuilds (projection, schema_name, owner) VALUES ($1, $2, $3)
       ON CONFLICT (projection) DO UPDATE SET schema_name = EXCLUDED.schema_name, owner = EXCLUDED.owner, position_commit = 0,
         position_prepare = 0, events_applied = 0, started_at = now(), updated_at = now()`,
      [projection.name, schema, owner],
    );
    await lock.query('COMMIT');
  } catch (error) {
    await lock.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/** The live table's indexes that belong to no constraint, as statements that create them in `schema`. */
async function liveIndexes(lock: pg.Client, schema: string, table: string) {
  const { rows } = await lock.query(
    `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition, i.indisunique AS unique
     FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`,
    [`public.${table}`],
  );
  return z.array(indexRow).parse(rows).map((index) => ({ ...index, definition: index.definition.replace(` ON public.${table} `, ` ON ${schema}.${table} `) }));
}

/** Plain indexes of the live tables that the side tables lack, or have only as the invalid leftover of a failed build. */
async function missingPlainIndexes(lock: pg.Client, projection: Projection, schema: string) {
  const missing = [];
  for (const table of projection.tables) {
    for (const index of (await liveIndexes(lock, schema, table)).filter((candidate) => !candidate.unique)) {
      const { rows } = await lock.query(
        `SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE c.relname = $1 AND c.relnamespace = $2::regnamespace AND i.indisvalid`,
        [index.name, schema],
      );
      if (rows.length === 0) missing.push(index);
    }
  }
  return missing;
}

const LOCK_NOT_AVAILABLE = '55P03';

/** The Postgres error code behind an error, through slonik's wrapping. */
function postgresCode(error: unknown): string | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    if ('code' in current && typeof current.code === 'string' && /^[0-9A-Z]{5}$/.test(current.code)) return current.code;
  }
  return undefined;
}
