// Audit records of API key changes.
import { auditTarget, type AuditMappers } from '../capability.ts';

const keyTarget = auditTarget('api_key', 'keyId');

export const apiKeyAuditMappers: AuditMappers = {
  ApiKeyCreated: (event) => ({
    action: 'api_key.created',
    ...keyTarget(event),
    details: { name: event.data.name, scopes: event.data.scopes, allowedIpCidrs: event.data.allowedIpCidrs, expiresAt: event.data.expiresAt },
  }),
  ApiKeyRenamed: (event) => ({ action: 'api_key.renamed', ...keyTarget(event), details: { name: event.data.name } }),
  ApiKeySuspended: (event) => ({ action: 'api_key.suspended', ...keyTarget(event) }),
  ApiKeyResumed: (event) => ({ action: 'api_key.resumed', ...keyTarget(event) }),
  ApiKeyRevoked: (event) => ({ action: 'api_key.revoked', ...keyTarget(event), details: { reason: event.data.reason } }),
  ApiKeySettingsChanged: (event) => ({ action: 'api_key.updated', ...keyTarget(event), details: { changes: event.data.changes } }),
  ApiKeyRolled: (event) => ({ action: 'api_key.rolled', ...keyTarget(event), details: { successorKeyId: event.data.successorKeyId, revokesAt: event.data.revokesAt } }),
};
