// Rebuilds a projection from the first event into fresh tables in a side schema, then swaps them in
// within one transaction, so queries see the old model until the new one is complete: never an empty
// or half-built one. The live runner keeps going meanwhile; the swap locks its checkpoint.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { START, comparePositions, type EventStore, type Position } from '../src/event-store/port.ts';
import type { Database } from '../src/db/pools.ts';
import type { Projection } from '../src/event-store/projection.ts';
import { park, promoteRebuildParked, rebuildParkingName } from './parking.ts';
import { applyReplayParkingFailures } from './runner.ts';

const REBUILD_BATCH = 10_000;

const constraintRow = z.object({ name: z.string(), definition: z.string() });
const indexRow = z.object({ definition: z.string(), unique: z.boolean() });

/** `read`: events read so far, of every type (what a progress bar counts). */
export type RebuildProgress = (progress: { applied: number; read: number; position: Position }) => void;

export async function rebuildProjection(deps: {
  db: Database;
  eventStore: EventStore;
  projection: Projection;
  onProgress?: RebuildProgress;
}): Promise<{ eventsApplied: number; parked: number; position: Position }> {
  const { db, eventStore, projection } = deps;
  const pool = db.slonik;
  // DDL that Postgres itself wrote (pg_get_indexdef, pg_get_constraintdef) around our own schema and
  // table names runs as text on the plain pg pool; nothing from a request ever reaches it.
  const ddl = async (text: string) => void (await db.pg.query(text));
  if (projection.rebuildable === false) throw new Error(`Projection ${projection.name} cannot be rebuilt: replaying it would repeat its effects`);
  const schema = `rebuild_${projection.name.replaceAll('-', '_')}`;
  await pool.query(sql.unsafe`DROP SCHEMA IF EXISTS ${sql.identifier([schema])} CASCADE`);
  await pool.query(sql.unsafe`CREATE SCHEMA ${sql.identifier([schema])}`);
  // Fresh tables with the live ones' columns, defaults, constraints and unique indexes (updates by key
  // and ON CONFLICT need them during the replay). Plain indexes are built once, after the bulk of the
  // replay, which is much cheaper than maintaining them row by row. Every name is kept, so after the
  // swap the tables look exactly as the migrations made them.
  const deferredIndexes: string[] = [];
  for (const table of projection.tables) {
    await pool.query(sql.unsafe`CREATE TABLE ${sql.identifier([schema, table])} (LIKE ${sql.identifier(['public', table])} INCLUDING ALL EXCLUDING INDEXES)`);
    for (const { name, definition } of await pool.any(sql.type(constraintRow)`
      SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
      WHERE conrelid = ${`public.${table}`}::regclass AND contype IN ('p', 'u', 'x')`)) {
      await ddl(`ALTER TABLE ${schema}.${table} ADD CONSTRAINT ${name} ${definition}`);
    }
    for (const { definition, unique } of await pool.any(sql.type(indexRow)`
      SELECT pg_get_indexdef(i.indexrelid) AS definition, i.indisunique AS unique FROM pg_index i
      WHERE i.indrelid = ${`public.${table}`}::regclass
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`)) {
      const inRebuildSchema = definition.replace(` ON public.${table} `, ` ON ${schema}.${table} `);
      if (unique) await ddl(inRebuildSchema);
      else deferredIndexes.push(inRebuildSchema);
    }
  }

  let position: Position = START;
  let applied = 0;
  let read = 0;
  // An event the projection cannot apply is parked, as in the live runner, not fatal to the rebuild.
  await pool.query(sql.unsafe`DELETE FROM projection_parked_events WHERE projection = ${rebuildParkingName(projection.name)}`);
  const waiting = new Map<string, string>();
  let parked = 0;
  const applyInto = async (tx: Parameters<Parameters<DatabasePool['transaction']>[0]>[0], after: Position) => {
    let count = 0;
    await tx.query(sql.unsafe`SELECT set_config('search_path', ${`${schema}, public`}, true)`);
    // The next batch is read while this one is written: the two cores work on both at once.
    let next = eventStore.readAll({ after, maxCount: REBUILD_BATCH });
    for (;;) {
      const batch = await next;
      if (batch.length === 0) return count;
      after = batch[batch.length - 1]!.position;
      const full = batch.length === REBUILD_BATCH;
      next = full ? eventStore.readAll({ after, maxCount: REBUILD_BATCH }) : Promise.resolve([]);
      next.catch(() => {}); // awaited on the next turn; an apply failure must not leave it unhandled
      const relevant = batch.filter((event) => projection.eventTypes.includes(event.type));
      const result = relevant.length > 0 ? await applyReplayParkingFailures(tx, projection, relevant, waiting) : { applied: 0, setAside: [] };
      if (result.setAside.length > 0) await park(tx, rebuildParkingName(projection.name), result.setAside, 1);
      parked += result.setAside.length;
      position = after;
      count += result.applied;
      applied += result.applied;
      read += batch.length;
      deps.onProgress?.({ applied, read, position });
      if (!full) return count;
    }
  };

  // Catch up outside any lock, one transaction per batch run.
  for (;;) {
    const before = position;
    await pool.transaction((tx) => applyInto(tx, position));
    if (comparePositions(position, before) === 0) break;
  }

  for (const definition of deferredIndexes) await ddl(definition);

  // Final catch-up and swap, with the live runner held off by the checkpoint lock.
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`INSERT INTO projection_checkpoints (name) VALUES (${projection.name}) ON CONFLICT DO NOTHING`);
    await tx.query(sql.unsafe`SELECT 1 FROM projection_checkpoints WHERE name = ${projection.name} FOR UPDATE`);
    await applyInto(tx, position);
    await tx.query(sql.unsafe`SELECT set_config('search_path', 'public', true)`);
    for (const table of projection.tables) {
      await tx.query(sql.unsafe`DROP TABLE ${sql.identifier(['public', table])}`);
      await tx.query(sql.unsafe`ALTER TABLE ${sql.identifier([schema, table])} SET SCHEMA public`);
    }
    await tx.query(sql.unsafe`DROP SCHEMA ${sql.identifier([schema])}`);
    await promoteRebuildParked(tx, projection.name);
    await tx.query(sql.unsafe`
      UPDATE projection_checkpoints
      -- Nothing visible to the live runner is beyond this: the final catch-up read under its lock.
      SET position_commit = ${position.commit.toString()}::bigint, position_prepare = ${position.prepare.toString()}::bigint,
          events_applied = ${applied}, updated_at = now(), rebuilt_at = now()
      WHERE name = ${projection.name}`);
  });
  return { eventsApplied: applied, parked, position };
}
