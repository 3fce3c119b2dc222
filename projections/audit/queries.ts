// The audit API's reads of audit_log (GET /api/employer/audit-events): newest first, keyset-paged by
// (occurred_at, global_position) on the indexes of migration 0020, always scoped to one employer.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { pageOf, type Keyset } from '../../src/http/page.ts';

export const auditEntry = z
  .object({
    id: z.string().meta({ description: 'Id of the event the entry records.' }),
    action: z.string().meta({ example: 'api_key.created' }),
    actor: z.object({ type: z.enum(['user', 'apiKey', 'scimToken', 'smartClient', 'system']), id: z.string() }),
    target: z.object({ type: z.string(), id: z.string() }).nullable(),
    occurredAt: z.string(),
    requestId: z.string().nullable().meta({ description: 'x-request-id of the request that caused it; a job or CLI run otherwise.' }),
    ipAddress: z.string().nullable().meta({ description: "The caller's address (after TRUST_PROXY); null for system actors, jobs and the CLI." }),
    userAgent: z.string().nullable().meta({ description: "The caller's User-Agent (its first 512 characters), where it sent one." }),
    details: z.record(z.string(), z.unknown()).meta({ description: 'What changed; never a secret (keys, tokens and signing secrets appear only as names, prefixes or hashes).' }),
  })
  .meta({ id: 'AuditEntry' });
export type AuditEntryView = z.infer<typeof auditEntry>;

export type AuditFilters = {
  /** Exact action, or a prefix ending in `.` (`scim.`). */
  action?: string;
  actorId?: string;
  targetId?: string;
  from?: string;
  to?: string;
};

/** The columns of audit_log that make an entry. */
export const auditEntryColumns = sql.fragment`event_id, global_position, action, actor_type, actor_id, target_type, target_id, details, occurred_at, request_id, ip_address, user_agent`;

export const auditEntryRow = z.object({
  event_id: z.string(),
  global_position: z.bigint(),
  action: z.string(),
  actor_type: z.enum(['user', 'apiKey', 'scimToken', 'smartClient', 'system']),
  actor_id: z.string(),
  target_type: z.string().nullable(),
  target_id: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  occurred_at: z.string(),
  request_id: z.string().nullable(),
  ip_address: z.string().nullable(),
  user_agent: z.string().nullable(),
});
export type AuditEntryRow = z.infer<typeof auditEntryRow>;

export function auditEntryOf(row: AuditEntryRow): AuditEntryView {
  return {
    id: row.event_id,
    action: row.action,
    actor: { type: row.actor_type, id: row.actor_id },
    target: row.target_type !== null && row.target_id !== null ? { type: row.target_type, id: row.target_id } : null,
    occurredAt: row.occurred_at,
    requestId: row.request_id,
    ipAddress: row.ip_address,
    userAgent: row.user_agent,
    details: row.details,
  };
}

/** The conditions on audit_log of an employer's entries under these filters. */
export function auditConditions(employerId: string, filters: AuditFilters) {
  const conditions = [sql.fragment`employer_id = ${employerId}`];
  if (filters.action !== undefined) {
    conditions.push(filters.action.endsWith('.')
      ? sql.fragment`action LIKE ${`${filters.action.replace(/[\\%_]/g, (character) => `\\${character}`)}%`}`
      : sql.fragment`action = ${filters.action}`);
  }
  if (filters.actorId !== undefined) conditions.push(sql.fragment`actor_id = ${filters.actorId}`);
  if (filters.targetId !== undefined) conditions.push(sql.fragment`target_id = ${filters.targetId}`);
  if (filters.from !== undefined) conditions.push(sql.fragment`occurred_at >= ${filters.from}::timestamptz`);
  if (filters.to !== undefined) conditions.push(sql.fragment`occurred_at < ${filters.to}::timestamptz`);
  return conditions;
}

const listRow = auditEntryRow.extend({ cursor_at: z.string() });

export async function listAuditEntries(
  pool: DatabasePool,
  employerId: string,
  filters: AuditFilters,
  { limit, after }: { limit: number; after: Keyset | null },
): Promise<{ entries: AuditEntryView[]; next: Keyset | null }> {
  const conditions = auditConditions(employerId, filters);
  if (after) conditions.push(sql.fragment`(occurred_at, global_position) < (${after.at}::timestamptz, ${after.id}::bigint)`);
  const rows = await pool.any(sql.type(listRow)`
    SELECT ${auditEntryColumns}, occurred_at::text AS cursor_at
    FROM audit_log WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY occurred_at DESC, global_position DESC LIMIT ${limit + 1}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.global_position.toString() }));
  return { entries: page.map(auditEntryOf), next };
}
