// Audit records of sessions (sign-in tokens are not audited: the session they start is).
import type { AuditMappers } from '../capability.ts';

export const identityAuditMappers: AuditMappers = {
  SessionStarted: (event) => ({ action: 'auth.session.start', targetType: 'user', targetId: String(event.data.userId) }),
  SessionEnded: (event) => ({ action: 'auth.session.end', targetType: 'user', targetId: String(event.data.userId), details: { reason: event.data.reason } }),
};
