// Encrypts short secrets (webhook signing secrets) at rest with AES-256-GCM under the service's
// ENCRYPTION_KEY. The sealed form is text so it fits a plain `text` column:
//   v1.<iv>.<tag>.<ciphertext>   (each part base64url; iv 12 random bytes, tag 16 bytes)
// The version prefix leaves room for a later format or key rotation without guessing.
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const FORMAT_VERSION = 'v1';
const ALGORITHM = 'aes-256-gcm';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Raised for a malformed key or sealed value. Never carries key or plaintext material. */
export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

/**
 * Parses ENCRYPTION_KEY: exactly 32 bytes written as 64 hex characters or as base64/base64url
 * (43 characters, optionally followed by one `=`). Returns a KeyObject, which does not print its
 * bytes when logged.
 */
export function parseEncryptionKey(text: string): KeyObject {
  const trimmed = text.trim();
  let bytes: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) {
    bytes = Buffer.from(trimmed, 'hex');
  } else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) {
    bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  }
  if (bytes?.length !== KEY_BYTES) {
    throw new SecretBoxError('ENCRYPTION_KEY must be 32 bytes written as 64 hex characters or as base64 (44 characters)');
  }
  return createSecretKey(bytes);
}

/**
 * Seals `plaintext`. `associatedData` (optional, e.g. the subscription id) is authenticated but
 * not stored: decrypting with different associated data fails, so a sealed value copied onto
 * another row is useless there.
 */
export function encryptSecret(plaintext: string, key: KeyObject, associatedData?: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [FORMAT_VERSION, ...[iv, tag, ciphertext].map((bytes) => bytes.toString('base64url'))].join('.');
}

/** Opens a value sealed by `encryptSecret`; throws SecretBoxError on a wrong key, tampering or a malformed value. */
export function decryptSecret(sealed: string, key: KeyObject, associatedData?: string): string {
  const [version, ivText, tagText, ciphertextText, ...rest] = sealed.split('.');
  if (version !== FORMAT_VERSION || ivText === undefined || tagText === undefined || ciphertextText === undefined || rest.length > 0) {
    throw new SecretBoxError('sealed secret is not in the v1.<iv>.<tag>.<ciphertext> format');
  }
  const iv = Buffer.from(ivText, 'base64url');
  const tag = Buffer.from(tagText, 'base64url');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new SecretBoxError('sealed secret has a malformed iv or tag');
  }
  const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES });
  decipher.setAuthTag(tag);
  if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertextText, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    // node's own message is generic too, but say what it means for the operator.
    throw new SecretBoxError('sealed secret could not be decrypted: wrong ENCRYPTION_KEY or the value was altered');
  }
}
