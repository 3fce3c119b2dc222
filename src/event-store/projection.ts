// What a projection is: a named function from events to read-model writes, applied in batches inside
// the transaction that also moves its checkpoint, so a crash never applies an event twice or loses one.
import type { DatabaseTransactionConnection } from 'slonik';
import type { RecordedEvent } from './port.ts';

export type Projection = {
  name: string;
  /**
   * Read-model tables this projection owns (created by migrations in the public schema). Its SQL
   * names them unqualified: a rebuild runs the same code with its own schema first on search_path.
   */
  tables: string[];
  /** Event types it reads (the runner skips others without calling it), or 'all' (the audit chain). */
  eventTypes: readonly string[] | 'all';
  /** False for projections with effects outside their tables (job dispatch): replay would repeat them. */
  rebuildable?: boolean;
  /** Read models a command waits for (read-your-writes). False for background consumers. */
  awaitedByCommands?: boolean;
  apply(tx: DatabaseTransactionConnection, events: RecordedEvent[]): Promise<void>;
};

export function handlesEventType(projection: Pick<Projection, 'eventTypes'>, type: string): boolean {
  return projection.eventTypes === 'all' || projection.eventTypes.includes(type);
}

/** The `types` filter of a count of a projection's events (undefined: every type). */
export function eventTypeFilterOf(projection: Pick<Projection, 'eventTypes'>): readonly string[] | undefined {
  return projection.eventTypes === 'all' ? undefined : projection.eventTypes;
}

/** Consecutive runs of events of one type, in order: lets a projection write each run in one statement. */
export function runsOfSameType(events: RecordedEvent[]): RecordedEvent[][] {
  const runs: RecordedEvent[][] = [];
  for (const event of events) {
    const last = runs[runs.length - 1];
    if (last && last[0]!.type === event.type) last.push(event);
    else runs.push([event]);
  }
  return runs;
}
