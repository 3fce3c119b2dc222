// What a projection is: a named function from events to read-model writes, applied in batches inside
// the transaction that also moves its checkpoint, so a crash never applies an event twice or loses one.
import type { DatabaseTransactionConnection } from 'slonik';
import type { DomainEvent } from './decider.ts';
import type { RecordedEvent } from './port.ts';

/** `Event`: the events it reads, as the event store parsed them (src/event-store/schemas.ts). */
export type Projection<Event extends DomainEvent = DomainEvent> = {
  name: string;
  /**
   * Read-model tables this projection owns (created by migrations in the public schema). Its SQL
   * names them unqualified: a rebuild runs the same code with its own schema first on search_path.
   */
  tables: string[];
  /** Event types it reads (the runner skips others without calling it), or 'all' (the audit chain). */
  eventTypes: readonly Event['type'][] | 'all';
  /** False for projections with effects outside their tables (job dispatch): replay would repeat them. */
  rebuildable?: boolean;
  /** Read models a command waits for (read-your-writes). False for background consumers. */
  awaitedByCommands?: boolean;
  /**
   * Applied by the Postgres event store in the transaction that appends its events, so a command's
   * read model is current when it answers (and waits for nothing); the runner skips those events
   * (projections/runner.ts). Its `apply` must also be right applied late or again (a version newer
   * than the row's wins): with KurrentDB, events from before it became inline, a parked event retried.
   */
  inline?: boolean;
  /**
   * For a background consumer that may lag: while events arrive one by one, the runner gathers them
   * this long and applies them in one batch, so it costs a few transactions a second however often
   * commands append (catch-up pages are applied at once). Unset: every wake-up is applied at once.
   */
  batchWindowMs?: number;
  apply(tx: DatabaseTransactionConnection, events: RecordedEvent<Event>[]): Promise<void>;
};

/**
 * A projection of the given events. The runner hands it only events of its `eventTypes`, parsed by
 * their schemas; one the store could not parse (flagged `unreadable`) is refused here, so it holds back
 * this projection alone and is never applied with a shape the code does not expect.
 */
export function defineProjection<Event extends DomainEvent>(projection: Projection<Event>): Projection<Event> {
  return {
    ...projection,
    apply(tx, events) {
      const unreadable = events.find((event) => event.unreadable !== undefined);
      if (unreadable) throw new Error(`Projection ${projection.name} cannot apply event ${unreadable.eventId} (${unreadable.type}): ${unreadable.unreadable}`);
      return projection.apply(tx, events);
    },
  };
}

export function handlesEventType(projection: Pick<Projection, 'eventTypes'>, type: string): boolean {
  return projection.eventTypes === 'all' || (projection.eventTypes as readonly string[]).includes(type);
}

/** The `types` filter of a count of a projection's events (undefined: every type). */
export function eventTypeFilterOf(projection: Pick<Projection, 'eventTypes'>): readonly string[] | undefined {
  return projection.eventTypes === 'all' ? undefined : projection.eventTypes;
}

/** Consecutive runs of events of one type, in order: lets a projection write each run in one statement. */
export function runsOfSameType<Event extends RecordedEvent<DomainEvent>>(events: Event[]): Event[][] {
  const runs: Event[][] = [];
  for (const event of events) {
    const last = runs[runs.length - 1];
    if (last && last[0]!.type === event.type) last.push(event);
    else runs.push([event]);
  }
  return runs;
}

/** Narrows a run of `runsOfSameType` to its one event type. */
export function isRunOf<Event extends DomainEvent, Type extends Event['type']>(
  run: RecordedEvent<Event>[],
  type: Type,
): run is RecordedEvent<Extract<Event, { type: Type }>>[] {
  return run[0]?.type === type;
}

/**
 * A batch's rows as one parameter for `json_to_recordset($1::json)`, a projection's set-based write:
 * JSON.stringify and `json` rather than slonik's `sql.jsonb` and `jsonb`, whose stable stringify and
 * character checks here, and jsonb's binary form there, are work a row set read once does not need.
 * A value Postgres refuses (a NUL character) fails the statement all the same, and so the batch.
 */
export const rowsAsJson = (rows: readonly object[]): string => JSON.stringify(rows);
