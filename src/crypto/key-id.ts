// The name of a public key: hex SHA-256 of its SPKI DER. Each audit checkpoint names the key that
// signed it this way (scripts/verify-audit-chain.mjs computes the same), and GET /api/audit/public-key
// publishes it beside the key.
import { createHash, type KeyObject } from 'node:crypto';

export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
}
