// Audit records of audit stream changes (never the credential). Deliveries are the cursor's, not audited.
import type { AuditMappers } from '../capability.ts';

const target = (data: Record<string, unknown>) => ({ targetType: 'audit_stream', targetId: String(data.streamId) });

export const auditStreamAuditMappers: AuditMappers = {
  AuditStreamCreated: (event) => ({
    action: 'audit_stream.create',
    ...target(event.data),
    details: { name: event.data.name, preset: event.data.preset, url: event.data.url, start: event.data.start },
  }),
  AuditStreamUpdated: (event) => ({ action: 'audit_stream.update', ...target(event.data), details: { fields: Object.keys(event.data.changes as object) } }),
  AuditStreamSecretReplaced: (event) => ({ action: 'audit_stream.secret.replace', ...target(event.data) }),
  AuditStreamPaused: (event) => ({ action: 'audit_stream.pause', ...target(event.data) }),
  AuditStreamResumed: (event) => ({ action: 'audit_stream.resume', ...target(event.data) }),
  AuditStreamDeleted: (event) => ({ action: 'audit_stream.delete', ...target(event.data) }),
};
