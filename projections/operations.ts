// Operators' controls of a projection (migration 0079): pausing it (every runner stops applying it
// until it is resumed; they learn of it by NOTIFY projection_control and check it in each batch's
// transaction), and skipping a parked event (kept in projection_skipped_events with who, why and
// when), after which the events of its stream held behind it are applied again.
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Position } from '../src/event-store/port.ts';

export const CONTROL_CHANNEL = 'projection_control';

const pauseRow = z.object({ projection: z.string(), paused_by: z.string(), reason: z.string().nullable(), paused_at: z.string() });
export type ProjectionPause = { by: string; reason: string | null; at: string };

/** Pauses a projection; false when it was paused already. Announced to every runner and waiter at commit. */
export async function pauseProjection(pool: DatabasePool, projection: string, by: { by: string; reason: string | null }): Promise<boolean> {
  return pool.transaction(async (tx) => {
    const { rowCount } = await tx.query(sql.unsafe`
      INSERT INTO projection_pauses (projection, paused_by, reason) VALUES (${projection}, ${by.by}, ${by.reason}) ON CONFLICT (projection) DO NOTHING`);
    if (rowCount > 0) await announce(tx, `${projection} paused`);
    return rowCount > 0;
  });
}

/** Resumes a paused projection; false when it was not paused. */
export async function resumeProjection(pool: DatabasePool, projection: string): Promise<boolean> {
  return pool.transaction(async (tx) => {
    const { rowCount } = await tx.query(sql.unsafe`DELETE FROM projection_pauses WHERE projection = ${projection}`);
    if (rowCount > 0) await announce(tx, `${projection} resumed`);
    return rowCount > 0;
  });
}

/** Delivered at commit, to this process's listeners too (they listen through the database). */
const announce = (tx: CommonQueryMethods, payload: string) => tx.query(sql.unsafe`SELECT pg_notify(${CONTROL_CHANNEL}, ${payload})`);

export async function pausedProjections(db: CommonQueryMethods): Promise<Map<string, ProjectionPause>> {
  const rows = await db.any(sql.type(pauseRow)`
    SELECT projection, paused_by, reason, to_json(paused_at) #>> '{}' AS paused_at FROM projection_pauses`);
  return new Map(rows.map((row) => [row.projection, { by: row.paused_by, reason: row.reason, at: row.paused_at }]));
}

/** A payload of CONTROL_CHANNEL: `<projection> paused|resumed`. */
export function parseControl(payload: string): { projection: string; paused: boolean } | null {
  const match = /^(\S+) (paused|resumed)$/.exec(payload);
  return match ? { projection: match[1]!, paused: match[2] === 'paused' } : null;
}

const skippedRow = z.object({ event_id: z.string(), stream_name: z.string(), stream_revision: z.string(), tenant_id: z.string().nullable(), event_type: z.string(), error: z.string() });
export type SkippedEvent = z.infer<typeof skippedRow>;

/**
 * Moves the event parked at `position` out of the projection's way into projection_skipped_events,
 * under the projection's checkpoint lock (no runner or retry applies that stream meanwhile). Only an
 * event that failed itself, not one waiting behind another: null when there is none at `position`.
 */
export async function moveParkedToSkipped(pool: DatabasePool, input: { projection: string; position: Position; by: string; reason: string }): Promise<SkippedEvent | null> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT 1 FROM projection_checkpoints WHERE name = ${input.projection} FOR UPDATE`);
    return tx.maybeOne(sql.type(skippedRow)`
      WITH moved AS (
        DELETE FROM projection_parked_events
        WHERE projection = ${input.projection} AND attempts > 0
          AND (position_commit, position_prepare) = (${input.position.commit.toString()}::bigint, ${input.position.prepare.toString()}::bigint)
        RETURNING *)
      INSERT INTO projection_skipped_events (projection, event_id, position_commit, position_prepare, stream_name, stream_revision, tenant_id, event_type,
        error, attempts, parked_at, skipped_by, reason)
      SELECT projection, event_id, position_commit, position_prepare, stream_name, stream_revision, tenant_id, event_type, error, attempts, parked_at,
        ${input.by}, ${input.reason}
      FROM moved
      RETURNING event_id, stream_name, stream_revision::text, tenant_id, event_type, error`);
  });
}
