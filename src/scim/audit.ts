// Audit records of SCIM groups. Users are the tenants capability's aggregate; its audit mappers
// record scim.user.* by the actor type.
import { auditTarget, type AuditMappers } from '../capability.ts';

const groupTarget = auditTarget('group', 'groupId');

export const scimAuditMappers: AuditMappers = {
  GroupCreated: (event) => ({ action: 'scim.group.create', ...groupTarget(event), details: { displayName: event.data.displayName } }),
  GroupAttributesChanged: (event) => ({ action: 'scim.group.update', ...groupTarget(event), details: { fields: Object.keys(event.data.changes as object) } }),
  GroupMembersAdded: (event) => ({ action: 'scim.group.update', ...groupTarget(event), details: { membersAdded: event.data.userIds } }),
  GroupMembersRemoved: (event) => ({ action: 'scim.group.update', ...groupTarget(event), details: { membersRemoved: event.data.userIds } }),
  GroupDeleted: (event) => ({ action: 'scim.group.delete', ...groupTarget(event) }),
};
