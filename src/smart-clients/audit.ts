// Audit records of SMART client changes (the key set itself is public, but only its kids are recorded).
import { auditTarget, type AuditMappers } from '../capability.ts';
import type { KeySource } from './events.ts';

const clientTarget = auditTarget('smart_client', 'clientId');
const keysOf = (data: KeySource) => (data.jwks ? { kids: data.jwks.keys.map((key) => key.kid) } : { jwksUrl: data.jwksUrl });

export const smartClientAuditMappers: AuditMappers = {
  SmartClientRegistered: (event) => {
    const data = event.data as KeySource & { name: string; scopes: string[] };
    return { action: 'smart_client.registered', ...clientTarget(event), details: { name: data.name, scopes: data.scopes, ...keysOf(data) } };
  },
  SmartClientKeysReplaced: (event) => ({ action: 'smart_client.keys_replaced', ...clientTarget(event), details: keysOf(event.data as KeySource) }),
  SmartClientRevoked: (event) => ({ action: 'smart_client.revoked', ...clientTarget(event) }),
};
