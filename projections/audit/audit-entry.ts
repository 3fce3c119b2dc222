// Audit records are derived from events: each capability says which of its events are auditable and
// how they read (action names of SPEC section 5.5). The audit projection writes them to audit_log.
import type { RecordedEvent } from '../../src/event-store/port.ts';

export type AuditEntry = { action: string; targetType: string; targetId: string; details?: Record<string, unknown> };

/** event type -> audit entry (or null when this occurrence is not auditable). */
export type AuditMappers = Record<string, (event: RecordedEvent) => AuditEntry | null>;
