// Events are data with schemas. Each event type has a zod schema of its data and a version; the
// TypeScript event types are inferred from the schemas. The registry of every capability's event
// schemas is given to the event store: appends validate new events (an invalid one is a programming
// error and is refused before anything is written), reads parse stored ones, upcasting data written
// under an older version to the current one first. So deciders and projections receive parsed
// events, never casts of stored JSON.
import { z } from 'zod';
import type { DomainEvent } from './decider.ts';
import type { NewEvent, RecordedEvent } from './port.ts';

/** Turns the data of one version of an event into the data of the next version. */
export type Upcaster = (data: Record<string, unknown>) => Record<string, unknown>;

export type EventSchema<Type extends string = string, Data extends z.ZodType<Record<string, unknown>> = z.ZodType<Record<string, unknown>>> = {
  type: Type;
  /** The version new events are written with; 1 until the shape changes. */
  version: number;
  data: Data;
  /** `upcasters[v]` turns version v into v + 1, for every v below `version`. */
  upcasters: Readonly<Record<number, Upcaster>>;
};

/**
 * Declares an event type. A shape change bumps `version` and adds the upcaster from the previous
 * version, so events already stored keep being read (as the new shape).
 */
export function eventSchema<const Type extends string, Data extends z.ZodType<Record<string, unknown>>>(
  type: Type,
  data: Data,
  history: { version: number; upcasters: Record<number, Upcaster> } = { version: 1, upcasters: {} },
): EventSchema<Type, Data> {
  for (let version = 1; version < history.version; version++) {
    if (!history.upcasters[version]) throw new Error(`Event ${type} is at version ${history.version} but has no upcaster from version ${version}`);
  }
  return { type, data, ...history };
}

/** The event type a schema describes (a union of schemas gives the union of their events). */
export type EventOf<Schema> = Schema extends EventSchema<infer Type, infer Data> ? DomainEvent<Type, z.infer<Data>> : never;

/** An event as it is written: its data as its schema parsed it, and the schema's current version. */
export type EncodedEvent = { type: string; data: Record<string, unknown>; schemaVersion: number };

/** A new event that has no schema, or data its schema refuses: a bug in the code that decided it. */
export class InvalidEventError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidEventError';
  }
}

/** A stored event a decider cannot fold: no schema for its type, a newer version than this code knows, or invalid data. */
export class UnreadableEventError extends Error {
  constructor(event: Pick<RecordedEvent, 'eventId' | 'type' | 'streamName'>, reason: string) {
    super(`Event ${event.eventId} (${event.type}) of ${event.streamName} cannot be read: ${reason}`);
    this.name = 'UnreadableEventError';
  }
}

export type EventRegistry = {
  /** Validates a new event for writing (throws InvalidEventError). */
  encode(event: NewEvent): EncodedEvent;
  /**
   * A stored event as projections read it (readAll, subscriptions): upcast and parsed, with
   * `metadata.schemaVersion` the version of the data delivered. An event that cannot be read (no
   * schema, e.g. written by a newer release; a version newer than this code knows; invalid data)
   * passes through as stored with `unreadable` saying why: a projection that does not handle its
   * type never sees it, one that does refuses it (defineProjection) and holds only itself back.
   */
  parse(event: RecordedEvent): RecordedEvent;
  /** A stored event as a decider folds it (readStream): parsed, or UnreadableEventError. */
  parseStrict(event: RecordedEvent): RecordedEvent;
};

export function createEventRegistry(schemas: readonly EventSchema[]): EventRegistry {
  const byType = new Map<string, EventSchema>();
  for (const schema of schemas) {
    if (byType.has(schema.type)) throw new Error(`Event type ${schema.type} is declared twice`);
    byType.set(schema.type, schema);
  }

  /** The current data of a stored event, or why there is none. */
  const read = (event: RecordedEvent): { data: Record<string, unknown>; version: number } | { unreadable: string } => {
    const schema = byType.get(event.type);
    if (!schema) return { unreadable: `no schema for event type ${event.type}` };
    // Events written before versions were recorded carry 1.
    const stored = event.metadata.schemaVersion ?? 1;
    if (stored > schema.version) return { unreadable: `written as version ${stored}; this code knows up to version ${schema.version}` };
    let data = event.data;
    for (let version = stored; version < schema.version; version++) data = schema.upcasters[version]!(data);
    const parsed = schema.data.safeParse(data);
    if (!parsed.success) return { unreadable: `data does not match version ${schema.version} of its schema: ${z.prettifyError(parsed.error)}` };
    return { data: parsed.data, version: schema.version };
  };

  return {
    encode(event) {
      const schema = byType.get(event.type);
      if (!schema) throw new InvalidEventError(`No schema for event type ${event.type}: add it to its capability's events`);
      const parsed = schema.data.safeParse(event.data);
      if (!parsed.success) throw new InvalidEventError(`Invalid ${event.type} event: ${z.prettifyError(parsed.error)}`);
      return { type: event.type, data: parsed.data, schemaVersion: schema.version };
    },
    parse(event) {
      const result = read(event);
      if ('unreadable' in result) return { ...event, unreadable: result.unreadable };
      return { ...event, data: result.data, metadata: { ...event.metadata, schemaVersion: result.version }, stored: storedFormOf(event) };
    },
    parseStrict(event) {
      const result = read(event);
      if ('unreadable' in result) throw new UnreadableEventError(event, result.unreadable);
      return { ...event, data: result.data, metadata: { ...event.metadata, schemaVersion: result.version }, stored: storedFormOf(event) };
    },
  };
}

function storedFormOf(event: RecordedEvent): NonNullable<RecordedEvent['stored']> {
  return event.stored ?? { data: event.data, metadata: event.metadata };
}
