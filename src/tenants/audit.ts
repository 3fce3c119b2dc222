import type { AuditMappers } from '../audit/audit-entry.ts';

const provisionActions = { scim: 'scim.user.provision', saml: 'auth.saml.provision', cli: 'user.create' } as const;

export const tenantAuditMappers: AuditMappers = {
  EmployerCreated: (event) => ({ action: 'employer.create', targetType: 'employer', targetId: String(event.data.employerId), details: { name: event.data.name } }),
  UserRegistered: (event) => ({
    action: provisionActions[event.data.source as keyof typeof provisionActions] ?? 'user.create',
    targetType: 'user',
    targetId: String(event.data.userId),
    details: { role: event.data.role },
  }),
  UserProfileUpdated: (event) => ({
    action: event.metadata.actor.type === 'scimToken' ? 'scim.user.update' : 'user.update',
    targetType: 'user',
    targetId: String(event.data.userId),
    details: { fields: Object.keys(event.data.changes as object) },
  }),
  UserDeactivated: (event) => ({
    action: event.metadata.actor.type === 'scimToken' ? 'scim.user.deactivate' : 'user.deactivate',
    targetType: 'user',
    targetId: String(event.data.userId),
    details: { scimDeleted: event.data.scimDeleted },
  }),
  UserReactivated: (event) => ({
    action: event.metadata.actor.type === 'scimToken' ? 'scim.user.update' : 'user.reactivate',
    targetType: 'user',
    targetId: String(event.data.userId),
    details: { active: true },
  }),
};
