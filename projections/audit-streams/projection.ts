// Read model `audit_streams`: what the routes list and what the delivery worker reads before every batch
// (status, preset, url, sealed credential). The cursor beside it is the worker's (audit_stream_cursors).
import { sql } from 'slonik';
import { AUDIT_STREAM_EVENT_NAMES, type AuditStreamEvent } from '../../src/audit-streams/events.ts';
import { defineProjection } from '../../src/event-store/projection.ts';

export const auditStreamsProjection = defineProjection<AuditStreamEvent>({
  name: 'audit-streams',
  tables: ['audit_streams'],
  eventTypes: AUDIT_STREAM_EVENT_NAMES,
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const at = event.metadata.occurredAt;
      switch (event.type) {
        case 'AuditStreamCreated': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO audit_streams (id, employer_id, name, preset, url, status, sealed_secret, start, created_event_id, created_at, updated_at)
            VALUES (${d.streamId}, ${event.metadata.tenantId!}, ${d.name}, ${d.preset}, ${d.url}, 'active', ${d.sealedSecret}, ${d.start}, ${event.eventId}, ${d.createdAt}, ${at})`);
          break;
        }
        case 'AuditStreamUpdated': {
          const c = event.data.changes;
          await tx.query(sql.unsafe`
            UPDATE audit_streams SET name = COALESCE(${c.name ?? null}, name), url = COALESCE(${c.url ?? null}, url), updated_at = ${at}
            WHERE id = ${event.data.streamId}`);
          break;
        }
        case 'AuditStreamSecretReplaced':
          await tx.query(sql.unsafe`UPDATE audit_streams SET sealed_secret = ${event.data.sealedSecret}, updated_at = ${at} WHERE id = ${event.data.streamId}`);
          break;
        case 'AuditStreamPaused':
        case 'AuditStreamResumed':
          await tx.query(sql.unsafe`
            UPDATE audit_streams SET status = ${event.type === 'AuditStreamPaused' ? 'paused' : 'active'}, updated_at = ${at} WHERE id = ${event.data.streamId}`);
          break;
        case 'AuditStreamDeleted':
          await tx.query(sql.unsafe`DELETE FROM audit_streams WHERE id = ${event.data.streamId}`);
          break;
      }
    }
  },
});
