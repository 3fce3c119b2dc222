// The projections as Prometheus sees them, read at each scrape by the process that runs them: each
// one's checkpoint, how far behind it is (events of its types after the checkpoint, counted up to a
// limit, and the age of the oldest event after it), and its parked events.
import type { DatabasePool } from 'slonik';
import { START, type EventStore } from '../src/event-store/port.ts';
import { eventTypeFilterOf, type Projection } from '../src/event-store/projection.ts';
import { readWithinScrapeTime, type Metrics } from '../src/metrics/registry.ts';
import { parkedCounts } from './parking.ts';
import { readCheckpoints } from './status.ts';

/** Pending events are counted up to this at each scrape (index entries only; a larger lag reads as this). */
export const LAG_COUNT_LIMIT = 10_000;

export function reportProjections(metrics: Metrics, deps: { pool: DatabasePool; eventStore: EventStore; projections: Projection[] }) {
  const byProjection = ['projection'];
  metrics.collectedGauges(
    'projections',
    {
      position: { name: 'projection_position', help: 'Global position of the last event a projection passed (its checkpoint).', labelNames: byProjection },
      lagEvents: { name: 'projection_lag_events', help: `Events of a projection's types after its checkpoint, counted up to ${LAG_COUNT_LIMIT}.`, labelNames: byProjection },
      lagSeconds: { name: 'projection_lag_seconds', help: 'Age of the oldest event after a projection\'s checkpoint while events of its types wait; 0 when none do.', labelNames: byProjection },
      parked: { name: 'projection_parked_events', help: 'Events a projection parked (could not apply), waiting for `projections retry`.', labelNames: byProjection },
    },
    async ({ position, lagEvents, lagSeconds, parked }) => {
      const [checkpoints, parkedByName] = await readWithinScrapeTime(deps.pool, async (tx) => [await readCheckpoints(tx), await parkedCounts(tx)] as const);
      await Promise.all(
        deps.projections.map(async (projection) => {
          const labels = { projection: projection.name };
          const after = checkpoints.get(projection.name)?.position ?? START;
          const pending = await deps.eventStore.countEventsAfter(after, { types: eventTypeFilterOf(projection), limit: LAG_COUNT_LIMIT });
          const oldest = pending > 0 ? (await deps.eventStore.readAll({ after, maxCount: 1 }))[0] : undefined;
          position.set(labels, Number(after.prepare));
          lagEvents.set(labels, pending);
          lagSeconds.set(labels, oldest ? Math.max(0, (Date.now() - Date.parse(oldest.recordedAt)) / 1000) : 0);
          parked.set(labels, parkedByName[projection.name] ?? 0);
        }),
      );
      // Parked events of a projection this build no longer has still need an operator.
      for (const [name, count] of Object.entries(parkedByName)) if (!deps.projections.some((known) => known.name === name)) parked.set({ projection: name }, count);
    },
  );
}
