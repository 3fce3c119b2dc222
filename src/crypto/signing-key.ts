// AUDIT_SIGNING_KEY (Ed25519, PKCS#8 PEM or its DER in base64), or for local use a key generated once
// into DATA_DIR/audit-signing.key, like the encryption key. It signs the audit chain's checkpoints.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Config } from '../config.ts';
import { readOrCreateKeyFile } from './encryption-key.ts';
import { keyIdOf } from './key-id.ts';

export type AuditSigner = { privateKey: KeyObject; publicKey: KeyObject; keyId: string };

function parseAuditSigningKey(text: string): AuditSigner {
  const trimmed = text.trim();
  let privateKey: KeyObject;
  try {
    privateKey = trimmed.startsWith('-----')
      ? createPrivateKey(trimmed)
      : createPrivateKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    throw new Error('AUDIT_SIGNING_KEY is not a PKCS#8 private key (PEM, or DER in base64)');
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('AUDIT_SIGNING_KEY must be an Ed25519 key');
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

export async function resolveAuditSigner(config: Config): Promise<AuditSigner> {
  if (config.AUDIT_SIGNING_KEY) return parseAuditSigningKey(config.AUDIT_SIGNING_KEY);
  const generate = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return parseAuditSigningKey(await readOrCreateKeyFile(config.DATA_DIR, 'audit-signing.key', generate));
}
