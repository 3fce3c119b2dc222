// The one interface every event store adapter implements (Postgres by default, KurrentDB optionally).
// Streams are named `tenant-<employerId>.<category>-<id>` so one tenant's history can be read alone;
// streams that are not owned by a tenant (uniqueness reservations) are named `system.<category>-<id>`.
// Every adapter is given the registry of event schemas (schemas.ts): it validates what it appends and
// parses what it reads.
import type { DomainEvent } from './decider.ts';

/** Who caused an event. */
export type Actor =
  | { type: 'user'; id: string }
  | { type: 'apiKey'; id: string }
  | { type: 'scimToken'; id: string }
  | { type: 'platformToken'; id: string }
  | { type: 'smartClient'; id: string }
  | { type: 'system'; id: string };

export type EventMetadata = {
  /** Employer id; null only for `system.*` streams. */
  tenantId: string | null;
  actor: Actor;
  correlationId: string;
  causationId: string | null;
  /**
   * Version of the event's data schema (schemas.ts). Written by the adapter: the schema's current
   * version. As read: the version of the data delivered, i.e. the current one once upcast.
   */
  schemaVersion: number;
  /** When the command that produced the event was decided (ISO 8601). */
  occurredAt: string;
  /** The caller's address (after TRUST_PROXY) and user agent, for commands of an HTTP request by a non-system actor. */
  ipAddress?: string;
  userAgent?: string;
  /** The W3C trace context of the command that appended it, when tracing (src/tracing.ts): what it causes joins that trace. */
  traceparent?: string;
};

export type NewEvent = { type: string; data: Record<string, unknown> };

/** What a writer says about the events it appends; the adapter adds each event's schemaVersion. */
export type AppendMetadata = Omit<EventMetadata, 'schemaVersion'>;

/**
 * A position in the global order. Postgres: commit = transaction id, prepare = global sequence;
 * KurrentDB: its own commit/prepare positions. Compare with `comparePositions`, never by one field.
 */
export type Position = { commit: bigint; prepare: bigint };
export const START: Position = { commit: 0n, prepare: 0n };

/** A stored event; `Event` narrows type and data for readers that know which events they get. */
export type RecordedEvent<Event extends DomainEvent = DomainEvent> = Event & {
  eventId: string;
  metadata: EventMetadata;
  streamName: string;
  /** 0-based revision of the event within its stream. */
  streamRevision: bigint;
  position: Position;
  recordedAt: string;
  /**
   * Set when the event could not be parsed (no schema for its type, a version newer than this code,
   * invalid data): `data` is then as stored. Only readAll and subscriptions deliver such events.
   */
  unreadable?: string;
  /**
   * The data and metadata as stored, when reading parsed or upcast them: what the audit chain hashes,
   * so a later upcaster never changes the hash of an event written before it.
   */
  stored?: { data: Record<string, unknown>; metadata: EventMetadata };
};

/** 'no_stream': the stream must not exist; 'any': no check; a bigint: the stream's current last revision. */
export type ExpectedRevision = 'no_stream' | 'any' | bigint;

export type AppendResult = { nextExpectedRevision: bigint; position: Position };

/** One stream's part of an append to several streams. */
export type StreamAppend = { streamName: string; events: NewEvent[]; expectedRevision: ExpectedRevision; metadata: AppendMetadata };

/** Each stream's next expected revision, in the order given, and the position of the last event written. */
export type MultiStreamAppendResult = { nextExpectedRevisions: bigint[]; position: Position };

export type ReadAllOptions = {
  /** Exclusive: events strictly after this position. */
  after?: Position;
  tenantId?: string;
  maxCount?: number;
};

export type Subscription = { stop(): Promise<void> };

export interface EventStore {
  /**
   * Projections this store applies in the appending transaction itself (`inline` ones; Postgres
   * only): their read models are current when an append returns, so commands do not wait for them.
   * KurrentDB shares no transaction with the read models: none, the runner applies them and commands wait.
   */
  readonly inlineProjections: readonly string[];
  appendToStream(
    streamName: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision; metadata: AppendMetadata },
  ): Promise<AppendResult>;
  /**
   * Appends to several distinct streams as one write: every stream is where its caller expected and
   * all the events are written, or nothing is (WrongExpectedRevisionError). A command that must change
   * two streams together (claim an e-mail address and register its user) cannot leave half done.
   */
  appendToStreams(appends: StreamAppend[]): Promise<MultiStreamAppendResult>;
  /**
   * Events of one stream in revision order, parsed for a decider; an empty array when the stream does
   * not exist. An event that cannot be parsed fails the read (UnreadableEventError).
   */
  readStream(streamName: string, options?: { fromRevision?: bigint }): Promise<RecordedEvent[]>;
  /** Events in global order, never skipping one that commits later with a lower position; parsed, or flagged `unreadable`. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * Catch-up subscription: delivers every event after `after` in global order, then live ones.
   * `batchWindowMs`: after a batch smaller than a full page, wait this long before reading on, so that
   * events appended meanwhile come in one batch (for consumers that may lag a little).
   */
  subscribeToAll(
    options: { after?: Position; tenantId?: string; batchWindowMs?: number; onError?: (error: unknown) => void },
    onEvents: (events: RecordedEvent[]) => Promise<void>,
  ): Subscription;
  /**
   * Operator figures (readiness, `projections status`, rebuild progress), never a command's path. The
   * position of the newest event (START when there is none).
   */
  headPosition(): Promise<Position>;
  /**
   * How many events lie strictly after `after` (only those of `types`, when given), counting at most
   * `limit`: exact up to it on both adapters. Postgres counts index entries; KurrentDB has no count,
   * so it reads the events (filtered on the server), which costs what reading them costs: keep
   * `limit` small where it is asked often.
   */
  countEventsAfter(after: Position, options?: { types?: readonly string[]; limit?: number }): Promise<number>;
  close(): Promise<void>;
}

export class WrongExpectedRevisionError extends Error {
  /** The stream; for an append to several streams, all of them, comma-separated. */
  readonly streamName: string;
  /** The expected revision (of the first stream, for several). */
  readonly expected: ExpectedRevision;
  constructor(streamName: string, expected: ExpectedRevision) {
    super(`Stream ${streamName} is not at the expected revision ${String(expected)}`);
    this.name = 'WrongExpectedRevisionError';
    this.streamName = streamName;
    this.expected = expected;
  }

  /** Refusal of an append to one or more streams; with several, the store need not say which was off. */
  static of(appends: StreamAppend[]): WrongExpectedRevisionError {
    return new WrongExpectedRevisionError(appends.map((append) => append.streamName).join(', '), appends[0]!.expectedRevision);
  }
}

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

/** Text form used in checkpoints, replay output and `--from`: `<commit>/<prepare>`. */
export function formatPosition(p: Position): string {
  return `${p.commit}/${p.prepare}`;
}

export function parsePosition(text: string): Position {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!match) throw new Error(`A position looks like <commit>/<prepare>, e.g. 812/40; got "${text}"`);
  return { commit: BigInt(match[1]!), prepare: BigInt(match[2]!) };
}

export function tenantStream(tenantId: string, category: string, id: string): string {
  return `tenant-${tenantId}.${category}-${id}`;
}

export function systemStream(category: string, id: string): string {
  return `system.${category}-${id}`;
}

/** The tenant a stream belongs to, read from its name; null for system streams. */
export function tenantOfStream(streamName: string): string | null {
  const match = /^tenant-([^.]+)\./.exec(streamName);
  return match ? match[1]! : null;
}

/**
 * What every adapter checks before an append: at least one event, and metadata naming the tenant the
 * stream belongs to (so no event can land in another tenant's history). Returns that tenant.
 */
export function assertAppendable(streamName: string, events: NewEvent[], metadata: AppendMetadata): string | null {
  if (events.length === 0) throw new Error('appendToStream needs at least one event');
  const tenantId = tenantOfStream(streamName);
  if (tenantId !== metadata.tenantId) throw new Error(`Stream ${streamName} does not belong to tenant ${metadata.tenantId ?? '(system)'}`);
  return tenantId;
}

/** `assertAppendable` for each part of an append to several streams, which must name each stream once. */
export function assertAppendableTogether(appends: StreamAppend[]): void {
  if (appends.length === 0) throw new Error('appendToStreams needs at least one stream');
  if (new Set(appends.map((append) => append.streamName)).size !== appends.length) throw new Error('appendToStreams names a stream twice');
  for (const append of appends) assertAppendable(append.streamName, append.events, append.metadata);
}
