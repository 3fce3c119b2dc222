// The service's own key pairs as an employer's SAML service provider: generated on the first SSO save
// (or the first rotation), the private key sealed under ENCRYPTION_KEY like webhook secrets, published
// in the SP metadata for signing and encryption.
//
// Rotation with an overlap: the new key is published at once (metadata-reading IdPs pick it up, and
// may encrypt to it from then on); the key it replaces keeps signing AuthnRequests and decrypting
// until the overlap ends, so an IdP that pinned the old certificate keeps working while its
// administrator imports the new one. Every key in use decrypts, since an IdP encrypts to whichever
// certificate it holds.
import { randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { generateSelfSignedKeyPair } from '../crypto/self-signed-certificate.ts';
import { decryptSecret, encryptSecret } from '../crypto/secret-box.ts';
import type { SpKeyRecord } from './events.ts';

/** SAML peers pin the SP certificate from metadata and do not need it to expire; it is rotated by hand. */
const SP_CERTIFICATE_VALIDITY_MS = 10 * 365 * 86_400_000;
export const DEFAULT_SP_KEY_OVERLAP_HOURS = 7 * 24;
export const MAX_SP_KEY_OVERLAP_HOURS = 90 * 24;

const associatedData = (employerId: string, keyId: string) => `saml-sp-key:${employerId}:${keyId}`;

/** A new key pair for `employerId`, its private key sealed. */
export async function newSpKey(employerId: string, encryptionKey: KeyObject, now: Date): Promise<SpKeyRecord> {
  const keyId = randomUUID();
  const pair = await generateSelfSignedKeyPair(`SAML SP ${employerId}`, new Date(now.getTime() - 60_000), new Date(now.getTime() + SP_CERTIFICATE_VALIDITY_MS));
  return { keyId, certificate: pair.certificatePem, sealedPrivateKey: encryptSecret(pair.privateKeyPem, encryptionKey, associatedData(employerId, keyId)), issuedAt: now.toISOString(), retiresAt: null };
}

export function openSpPrivateKey(employerId: string, key: SpKeyRecord, encryptionKey: KeyObject): string {
  return decryptSecret(key.sealedPrivateKey, encryptionKey, associatedData(employerId, key.keyId));
}

/** The keys in use at `now`, oldest first: the first signs, all decrypt and are published. */
export function spKeysInUse(keys: SpKeyRecord[], now: Date): SpKeyRecord[] {
  return keys.filter((key) => key.retiresAt === null || Date.parse(key.retiresAt) > now.getTime()).sort((a, b) => a.issuedAt.localeCompare(b.issuedAt));
}

/** The keys left after `issued` replaced every key not retiring yet, with an overlap ending at `retiresAt`. */
export function keysAfterIssue(keys: SpKeyRecord[], issued: SpKeyRecord, retiring: Array<{ keyId: string; retiresAt: string }>): SpKeyRecord[] {
  const retiresAt = new Map(retiring.map((entry) => [entry.keyId, entry.retiresAt]));
  const kept = keys.filter((key) => key.retiresAt === null || Date.parse(key.retiresAt) > Date.parse(issued.issuedAt));
  return [...kept.map((key) => ({ ...key, retiresAt: retiresAt.get(key.keyId) ?? key.retiresAt })), issued];
}
