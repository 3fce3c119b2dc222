// Audit streams as the routes show them, each with its delivery state and lag: the worker's cursor
// (audit_stream_cursors, src/audit-streams/cursors.ts) and the entries after it, joined in the same
// statement. Scoped by employer: another employer's stream answers like one that does not exist.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { AUDIT_STREAM_PRESETS, AUDIT_STREAM_STATUSES } from '../../src/audit-streams/events.ts';
import { notFound } from '../../src/http/errors.ts';

export const auditStreamView = z
  .object({
    id: z.string().meta({ example: 'ast_4f1c2b9d0e8a4c6f9b3d2e1a0c7b5d8e' }),
    name: z.string(),
    preset: z.enum(AUDIT_STREAM_PRESETS),
    url: z.string(),
    status: z.enum(AUDIT_STREAM_STATUSES),
    createdAt: z.string(),
    updatedAt: z.string(),
    delivery: z.object({
      deliveredEntries: z.number().int().meta({ description: 'Entries the destination acknowledged (2xx) so far.' }),
      lastDeliveredAt: z.string().nullable(),
      consecutiveFailures: z.number().int().meta({ description: 'Failed attempts of the current batch; 0 after a success.' }),
      lastFailureAt: z.string().nullable(),
      lastStatusCode: z.number().int().nullable().meta({ description: "The destination's status on the last failed attempt; null when no response came." }),
      lastError: z.string().nullable().meta({ description: 'Why the last attempt failed (status and the start of the answer, or the network error); null after a success.' }),
      nextAttemptAt: z.string().nullable().meta({ description: 'When a failed batch is tried again.' }),
    }),
    lag: z.object({
      entries: z.number().int().meta({ description: 'Audit entries not yet acknowledged by the destination.' }),
      seconds: z.number().int().meta({ description: 'Age of the oldest entry not yet acknowledged; 0 when none waits.' }),
    }).meta({ description: 'How far the destination is behind the audit log (entries sealed into the audit chain).' }),
  })
  .meta({ id: 'AuditStream' });
export type AuditStreamView = z.infer<typeof auditStreamView>;

const viewRow = z.object({
  id: z.string(), name: z.string(), preset: z.enum(AUDIT_STREAM_PRESETS), url: z.string(), status: z.enum(AUDIT_STREAM_STATUSES),
  created_at: z.string(), updated_at: z.string(),
  delivered_entries: z.bigint(), last_delivered_at: z.string().nullable(), consecutive_failures: z.number(), last_failure_at: z.string().nullable(),
  last_status_code: z.number().nullable(), last_error: z.string().nullable(), next_attempt_at: z.string().nullable(),
  lag_entries: z.number(), lag_seconds: z.number(),
});

/**
 * The chain seq after which the stream `stream` (an alias of audit_streams) starts: 0, or for
 * `latest` the seq before its creation event's (NULL until that is sealed: nothing is due yet).
 */
function startAfterSeq(stream: string) {
  return sql.fragment`CASE WHEN ${sql.identifier([stream, 'start'])} = 'earliest' THEN 0::bigint
    ELSE (SELECT seq - 1 FROM audit_chain WHERE event_id = ${sql.identifier([stream, 'created_event_id'])}) END`;
}

/** The entries after a stream's cursor (or its start): the chain seq orders them, audit_log holds them. */
export function entriesAfterCursor(stream: string) {
  return sql.fragment`
    FROM audit_chain ch JOIN audit_log l ON l.event_id = ch.event_id AND l.employer_id = ch.employer_id
    WHERE ch.employer_id = ${sql.identifier([stream, 'employer_id'])}
      AND ch.seq > COALESCE((SELECT delivered_seq FROM audit_stream_cursors WHERE stream_id = ${sql.identifier([stream, 'id'])}), ${startAfterSeq(stream)})`;
}

const selectViews = sql.fragment`
  SELECT s.id, s.name, s.preset, s.url, s.status, s.created_at, s.updated_at,
         COALESCE(c.delivered_entries, 0) AS delivered_entries, c.last_delivered_at,
         COALESCE(c.consecutive_failures, 0) AS consecutive_failures, c.last_failure_at,
         c.last_status_code, c.last_error, c.next_attempt_at,
         lag.entries AS lag_entries, COALESCE(floor(extract(epoch FROM now() - lag.oldest)), 0)::int AS lag_seconds
  FROM audit_streams s
  LEFT JOIN audit_stream_cursors c ON c.stream_id = s.id
  LEFT JOIN LATERAL (SELECT count(*)::int AS entries, min(l.occurred_at) AS oldest ${entriesAfterCursor('s')}) lag ON true`;

const viewOf = (row: z.infer<typeof viewRow>): AuditStreamView => ({
  id: row.id, name: row.name, preset: row.preset, url: row.url, status: row.status, createdAt: row.created_at, updatedAt: row.updated_at,
  delivery: {
    deliveredEntries: Number(row.delivered_entries),
    lastDeliveredAt: row.last_delivered_at,
    consecutiveFailures: row.consecutive_failures,
    lastFailureAt: row.last_failure_at,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    nextAttemptAt: row.next_attempt_at,
  },
  lag: { entries: row.lag_entries, seconds: Math.max(0, row.lag_seconds) },
});

/** Every stream of the employer, oldest first (at most MAX_STREAMS_PER_EMPLOYER, src/audit-streams/commands.ts). */
export async function listAuditStreams(db: CommonQueryMethods, employerId: string): Promise<AuditStreamView[]> {
  const rows = await db.any(sql.type(viewRow)`${selectViews} WHERE s.employer_id = ${employerId} ORDER BY s.created_at, s.id`);
  return rows.map(viewOf);
}

/** One stream of the employer, or 404. */
export async function getAuditStream(db: CommonQueryMethods, employerId: string, streamId: string): Promise<AuditStreamView> {
  const row = await db.maybeOne(sql.type(viewRow)`${selectViews} WHERE s.employer_id = ${employerId} AND s.id = ${streamId}`);
  if (!row) throw notFound('Audit stream');
  return viewOf(row);
}

export async function countAuditStreams(db: CommonQueryMethods, employerId: string): Promise<number> {
  return Number(await db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_streams WHERE employer_id = ${employerId}`));
}

const targetRow = z.object({
  id: z.string(), employer_id: z.string(), name: z.string(), preset: z.enum(AUDIT_STREAM_PRESETS), url: z.string(), status: z.enum(AUDIT_STREAM_STATUSES),
  sealed_secret: z.string(), start_after_seq: z.bigint().nullable(),
});
export type AuditStreamTarget = z.infer<typeof targetRow>;

/** What the delivery worker needs of a stream (its sealed credential included), or null once deleted. */
export async function auditStreamTarget(db: CommonQueryMethods, streamId: string): Promise<AuditStreamTarget | null> {
  return db.maybeOne(sql.type(targetRow)`
    SELECT s.id, s.employer_id, s.name, s.preset, s.url, s.status, s.sealed_secret, ${startAfterSeq('s')} AS start_after_seq FROM audit_streams s WHERE s.id = ${streamId}`);
}

/** Active streams with entries to send (of one employer, or of all): what the kick and the sweep enqueue. */
export async function activeStreamsBehind(db: CommonQueryMethods, employerId: string | null): Promise<ReadonlyArray<{ id: string; employer_id: string }>> {
  return db.any(sql.type(z.object({ id: z.string(), employer_id: z.string() }))`
    SELECT s.id, s.employer_id FROM audit_streams s
    WHERE s.status = 'active' ${employerId === null ? sql.fragment`` : sql.fragment`AND s.employer_id = ${employerId}`}
      AND EXISTS (SELECT 1 ${entriesAfterCursor('s')})`);
}
