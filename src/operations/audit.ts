// Audit records of the scheduled operational jobs and of operators' skips of parked events, on the
// employer they concern.
import type { AuditMappers } from '../capability.ts';

export const operationsAuditMappers: AuditMappers = {
  IntegrationAlertRaised: (event) => ({
    action: 'integration.alert.ip_rejections',
    targetType: 'employer',
    targetId: String(event.metadata.tenantId),
    details: { hour: event.data.hour, rejections: event.data.rejections, threshold: event.data.threshold, sources: event.data.sources },
  }),
  ApiKeyInventoryReviewed: (event) => ({
    action: 'api_key.inventory_review',
    targetType: 'employer',
    targetId: String(event.metadata.tenantId),
    details: event.data,
  }),
  ProjectionEventSkipped: (event) => ({
    action: 'projection.event_skipped',
    targetType: 'event',
    targetId: String(event.data.eventId),
    details: { projection: event.data.projection, eventType: event.data.eventType, skippedBy: event.data.skippedBy, reason: event.data.reason },
  }),
};
