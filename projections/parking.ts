// The projections' dead-letter table (migration 0009): events a projection could not apply, parked
// with their error so that it moves past them instead of stalling every tenant, and the later events
// of their streams, which wait there behind them so that a retry keeps each stream's order.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Position, RecordedEvent } from '../src/event-store/port.ts';

/** An event the runner set aside: `error` says why it failed, or `behind` names the parked event of its stream it waits behind. */
export type SetAside = { event: RecordedEvent; error: string; behind: string | null };

const parkedEventRow = z.object({
  projection: z.string(),
  event_id: z.string(),
  position_commit: z.string(),
  position_prepare: z.string(),
  stream_name: z.string(),
  stream_revision: z.string(),
  tenant_id: z.string().nullable(),
  event_type: z.string(),
  error: z.string(),
  attempts: z.number(),
  parked_at: z.string(),
  last_attempt_at: z.string(),
});
export type ParkedEventRow = z.infer<typeof parkedEventRow>;

const MAX_ERROR_LENGTH = 2000;

/** The error as an operator reads it: the message, the SQLSTATE and Postgres's own message when a driver wrapped it. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  // A few causes deep at most: a chain may loop.
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause !== undefined && cause !== null; depth++) {
    const message = cause instanceof Error ? cause.message : String(cause);
    const code = (cause as { code?: unknown }).code;
    if (!parts.includes(message)) parts.push(typeof code === 'string' ? `${message} [${code}]` : message);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return parts.join(': ').slice(0, MAX_ERROR_LENGTH);
}

export const waitingBehind = (eventId: string) => `waiting behind parked event ${eventId} of the same stream`;

/** Streams with a parked event, each with the first one: later events of those streams wait behind it. */
export async function waitingStreams(db: CommonQueryMethods, projection: string): Promise<Map<string, string>> {
  const rows = await db.any(sql.type(z.object({ stream_name: z.string(), event_id: z.string() }))`
    SELECT DISTINCT ON (stream_name) stream_name, event_id FROM projection_parked_events
    WHERE projection = ${projection} ORDER BY stream_name, position_commit, position_prepare`);
  return new Map(rows.map((row) => [row.stream_name, row.event_id]));
}

/** Parks events; `attempts` counts the failed applications of those that failed (those waiting behind another were not tried). */
export async function park(db: CommonQueryMethods, projection: string, setAside: SetAside[], attempts: number): Promise<void> {
  const rows = setAside.map(({ event, error, behind }) => ({
    event_id: event.eventId,
    position_commit: event.position.commit.toString(),
    position_prepare: event.position.prepare.toString(),
    stream_name: event.streamName,
    stream_revision: event.streamRevision.toString(),
    tenant_id: event.metadata.tenantId,
    event_type: event.type,
    error,
    attempts: behind ? 0 : attempts,
  }));
  await db.query(sql.unsafe`
    INSERT INTO projection_parked_events (projection, event_id, position_commit, position_prepare, stream_name, stream_revision, tenant_id, event_type, error, attempts)
    SELECT ${projection}, event_id, position_commit, position_prepare, stream_name, stream_revision, tenant_id, event_type, error, attempts
    FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(event_id text, position_commit bigint, position_prepare bigint, stream_name text,
      stream_revision bigint, tenant_id text, event_type text, error text, attempts integer)
    ON CONFLICT (projection, event_id) DO NOTHING`);
}

/**
 * A rebuild parks under a name of its own, in the transaction of each batch it writes (so a rebuild
 * that resumes finds them, and `waitingStreams` of that name); at the swap its verdict replaces what
 * the live runner had parked, since the rebuilt model is the one in use from then on.
 */
export const rebuildParkingName = (projection: string) => `${projection}#rebuild`;

/** Returns how many events the rebuild parked. */
export async function promoteRebuildParked(db: CommonQueryMethods, projection: string): Promise<number> {
  await db.query(sql.unsafe`DELETE FROM projection_parked_events WHERE projection = ${projection}`);
  const { rowCount } = await db.query(sql.unsafe`UPDATE projection_parked_events SET projection = ${projection} WHERE projection = ${rebuildParkingName(projection)}`);
  return rowCount;
}

const selectParked = sql.fragment`
  SELECT projection, event_id, position_commit::text, position_prepare::text, stream_name, stream_revision::text, tenant_id, event_type,
         error, attempts, to_json(parked_at) #>> '{}' AS parked_at, to_json(last_attempt_at) #>> '{}' AS last_attempt_at
  FROM projection_parked_events`;

/** One projection's parked events after `after` (of one stream, when given), in global order (or every projection's, first `limit`). */
export async function listParked(db: CommonQueryMethods, options: { projection?: string; streamName?: string; after?: Position; limit: number }): Promise<ParkedEventRow[]> {
  const conditions = [sql.fragment`true`];
  if (options.projection) conditions.push(sql.fragment`projection = ${options.projection}`);
  if (options.streamName) conditions.push(sql.fragment`stream_name = ${options.streamName}`);
  if (options.after) {
    conditions.push(sql.fragment`(position_commit, position_prepare) > (${options.after.commit.toString()}::bigint, ${options.after.prepare.toString()}::bigint)`);
  }
  return [...(await db.any(sql.type(parkedEventRow)`
    ${selectParked} WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY projection, position_commit, position_prepare LIMIT ${options.limit}`))];
}

/** Parked events per projection (only those with any). */
export async function parkedCounts(db: CommonQueryMethods): Promise<Record<string, number>> {
  const rows = await db.any(sql.type(z.object({ projection: z.string(), count: z.number() }))`
    SELECT projection, count(*)::int AS count FROM projection_parked_events GROUP BY projection ORDER BY projection`);
  return Object.fromEntries(rows.map((row) => [row.projection, row.count]));
}

export async function unpark(db: CommonQueryMethods, projection: string, eventId: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM projection_parked_events WHERE projection = ${projection} AND event_id = ${eventId}`);
}

/** A retry that failed again (`tried`), or found the event still waiting behind another (`behind`). */
export async function recordRetry(db: CommonQueryMethods, projection: string, eventId: string, outcome: { error: string; tried: boolean }): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE projection_parked_events
    SET error = ${outcome.error}, attempts = attempts + ${outcome.tried ? 1 : 0}, last_attempt_at = CASE WHEN ${outcome.tried} THEN now() ELSE last_attempt_at END
    WHERE projection = ${projection} AND event_id = ${eventId}`);
}
