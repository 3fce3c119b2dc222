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
  AdminRoleMappingSet: (event) => ({ action: 'admin_role.mapping.set', targetType: 'employer', targetId: String(event.data.employerId), details: event.data.mapping as Record<string, unknown> }),
  AdministratorAdded: (event) => ({ action: 'admin_role.grant', targetType: 'user', targetId: String(event.data.userId), details: { via: event.data.via } }),
  AdministratorRemoved: (event) => ({ action: 'admin_role.revoke', targetType: 'user', targetId: String(event.data.userId), details: { via: event.data.via } }),
  AdministratorRemovalRefused: (event) => ({ action: 'admin_role.revoke_refused', targetType: 'user', targetId: String(event.data.userId), details: { via: event.data.via, reason: 'LAST_ADMINISTRATOR' } }),
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
  UserErased: (event) => ({ action: 'user.erase', targetType: 'user', targetId: String(event.data.userId), details: { erasedAt: event.data.erasedAt } }),
};
