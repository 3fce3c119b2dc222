// Read model `audit_log`: one row per auditable event, written in one statement per batch.
import { sql } from 'slonik';
import type { AuditMappers } from '../../src/capability.ts';
import { defineProjection, rowsAsJson, type Projection } from '../../src/event-store/projection.ts';

export function auditProjection(mappers: AuditMappers): Projection {
  return defineProjection({
    name: 'audit',
    tables: ['audit_log'],
    eventTypes: Object.keys(mappers),
    awaitedByCommands: true,
    async apply(tx, events) {
      const rows = events.flatMap((event) => {
        const entry = mappers[event.type]?.(event);
        if (!entry || !event.metadata.tenantId) return [];
        return [{
          global_position: event.position.prepare.toString(),
          event_id: event.eventId,
          employer_id: event.metadata.tenantId,
          action: entry.action,
          actor_type: event.metadata.actor.type,
          actor_id: event.metadata.actor.id,
          target_type: entry.targetType,
          target_id: entry.targetId,
          details: entry.details ?? {},
          occurred_at: event.metadata.occurredAt,
          // Commands started by a request carry its id as correlation id.
          request_id: event.metadata.correlationId,
          ip_address: event.metadata.ipAddress ?? null,
          user_agent: event.metadata.userAgent ?? null,
        }];
      });
      if (rows.length === 0) return;
      await tx.query(sql.unsafe`
        INSERT INTO audit_log (global_position, event_id, employer_id, action, actor_type, actor_id, target_type, target_id, details, occurred_at, request_id, ip_address, user_agent)
        SELECT global_position, event_id, employer_id, action, actor_type, actor_id, target_type, target_id, details, occurred_at, request_id, ip_address, user_agent
        FROM json_to_recordset(${rowsAsJson(rows)}::json) AS r(global_position bigint, event_id uuid, employer_id text, action text,
          actor_type text, actor_id text, target_type text, target_id text, details jsonb, occurred_at timestamptz, request_id text,
          ip_address text, user_agent text)`);
    },
  });
}
