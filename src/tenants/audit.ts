import type { AuditEntry, AuditMappers } from '../capability.ts';
import type { RecordedEvent } from '../event-store/port.ts';

const provisionActions = { scim: 'scim.user.provision', saml: 'auth.saml.provision', cli: 'user.create' } as const;

/** A change to a user, audited under SCIM's action name when a SCIM token made it (SPEC 5.5). */
const userChange = (scimAction: string, otherAction: string, details: (event: RecordedEvent) => Record<string, unknown>) =>
  (event: RecordedEvent): AuditEntry => ({
    action: event.metadata.actor.type === 'scimToken' ? scimAction : otherAction,
    targetType: 'user',
    targetId: String(event.data.userId),
    details: details(event),
  });

export const tenantAuditMappers: AuditMappers = {
  EmployerCreated: (event) => ({ action: 'employer.create', targetType: 'employer', targetId: String(event.data.employerId), details: { name: event.data.name } }),
  UserRegistered: (event) => ({
    action: provisionActions[event.data.source as keyof typeof provisionActions] ?? 'user.create',
    targetType: 'user',
    targetId: String(event.data.userId),
    details: { role: event.data.role },
  }),
  UserProfileUpdated: userChange('scim.user.update', 'user.update', (event) => ({ fields: event.data.fields })),
  UserDeactivated: userChange('scim.user.deactivate', 'user.deactivate', (event) => ({ scimDeleted: event.data.scimDeleted })),
  UserReactivated: userChange('scim.user.update', 'user.reactivate', () => ({ active: true })),
};
