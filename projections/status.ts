// What operators see of the projections: `projections status` and GET /readyz. Events are counted
// through the event-store port, so both answer on either adapter; checkpoints and parked events are
// read-model tables, always in Postgres.
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { START, formatPosition, type EventStore, type Position } from '../src/event-store/port.ts';
import type { ProjectionReadiness } from '../src/http/server.ts';
import { parkedCounts } from './parking.ts';
import { pausedProjections, type ProjectionPause } from './operations.ts';
import { eventTypeFilterOf, type Projection } from '../src/event-store/projection.ts';

/** Readiness counts pending events up to this: enough to say how far behind, cheap on every probe. */
export const READINESS_COUNT_LIMIT = 1000;

const checkpointRow = z.object({ name: z.string(), position_commit: z.string(), position_prepare: z.string(), updated_at: z.string(), idle: z.boolean() });

/** Checkpoints by name, with whether each has not moved for a minute. */
export async function readCheckpoints(pool: CommonQueryMethods) {
  const rows = await pool.any(sql.type(checkpointRow)`
    SELECT name, position_commit::text, position_prepare::text, to_json(updated_at) #>> '{}' AS updated_at,
           updated_at < now() - interval '60 seconds' AS idle
    FROM projection_checkpoints`);
  return new Map(rows.map((row) => [row.name, { position: { commit: BigInt(row.position_commit), prepare: BigInt(row.position_prepare) } as Position, updatedAt: row.updated_at, idle: row.idle }]));
}

export type ProjectionStatus = {
  projection: string;
  position: string | null;
  updatedAt: string | null;
  /** Events of its types after its checkpoint, counted up to the caller's limit; null for a projection this build does not have. */
  pendingEvents: number | null;
  parkedEvents: number;
  rebuildable: boolean | null;
  /** Who paused it, why and when (`projections pause`); null when it runs. */
  paused: ProjectionPause | null;
};

/**
 * Each projection's checkpoint, pending events (at most `countLimit`) and parked events; also any
 * projection this build no longer has that still has parked events.
 */
export async function projectionStatuses(deps: { pool: DatabasePool; eventStore: EventStore; projections: Projection[]; countLimit: number }): Promise<ProjectionStatus[]> {
  const [checkpoints, parked, paused] = await Promise.all([readCheckpoints(deps.pool), parkedCounts(deps.pool), pausedProjections(deps.pool)]);
  const known = await Promise.all(
    deps.projections.map(async (projection): Promise<ProjectionStatus> => {
      const checkpoint = checkpoints.get(projection.name);
      const pending = await deps.eventStore.countEventsAfter(checkpoint?.position ?? START, { types: eventTypeFilterOf(projection), limit: deps.countLimit });
      return {
        projection: projection.name,
        position: checkpoint ? formatPosition(checkpoint.position) : null,
        updatedAt: checkpoint?.updatedAt ?? null,
        pendingEvents: pending,
        parkedEvents: parked[projection.name] ?? 0,
        rebuildable: projection.rebuildable !== false,
        paused: paused.get(projection.name) ?? null,
      };
    }),
  );
  const names = new Set(deps.projections.map((projection) => projection.name));
  const unknown = Object.entries(parked)
    .filter(([name]) => !names.has(name))
    .map(([name, count]): ProjectionStatus => {
      const checkpoint = checkpoints.get(name);
      return { projection: name, position: checkpoint ? formatPosition(checkpoint.position) : null, updatedAt: checkpoint?.updatedAt ?? null, pendingEvents: null, parkedEvents: count, rebuildable: null, paused: paused.get(name) ?? null };
    });
  return [...known, ...unknown];
}

/**
 * What GET /readyz reports about the projections: three small reads, plus a bounded count per
 * projection idle for a minute. A paused projection is idle on purpose: reported as paused, not stalled.
 */
export async function projectionReadiness(deps: { pool: DatabasePool; eventStore: EventStore; projections: Projection[] }): Promise<ProjectionReadiness> {
  const [checkpoints, parked, paused] = await Promise.all([readCheckpoints(deps.pool), parkedCounts(deps.pool), pausedProjections(deps.pool)]);
  const lag: Record<string, number> = {};
  await Promise.all(
    deps.projections.map(async (projection) => {
      const checkpoint = checkpoints.get(projection.name);
      if (!checkpoint?.idle || paused.has(projection.name)) return;
      const pending = await deps.eventStore.countEventsAfter(checkpoint.position, { types: eventTypeFilterOf(projection), limit: READINESS_COUNT_LIMIT });
      if (pending > 0) lag[projection.name] = pending;
    }),
  );
  return { stalled: Object.keys(lag), lag, parked, paused: [...paused.keys()].sort() };
}
