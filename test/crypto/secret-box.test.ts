import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { decryptSecret, encryptSecret, parseEncryptionKey, SecretBoxError } from '../../src/crypto/secret-box.ts';

const keyBytes = randomBytes(32);
const key = parseEncryptionKey(keyBytes.toString('base64'));
const secret = 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cy0xMjM0NTY3OA==';

describe('parseEncryptionKey', () => {
  it('accepts the same 32 bytes as hex, base64 and base64url', () => {
    const sealed = encryptSecret(secret, key);
    for (const text of [keyBytes.toString('hex'), keyBytes.toString('base64url'), ` ${keyBytes.toString('base64')}\n`]) {
      expect(decryptSecret(sealed, parseEncryptionKey(text))).toBe(secret);
    }
  });

  it('refuses keys that are not exactly 32 bytes, without echoing them', () => {
    for (const text of ['', 'short', randomBytes(16).toString('hex'), randomBytes(31).toString('base64'), randomBytes(33).toString('base64'), 'z'.repeat(64)]) {
      const attempt = () => parseEncryptionKey(text);
      expect(attempt).toThrow(SecretBoxError);
      if (text) expect(attempt).not.toThrow(text);
    }
  });

  it('returns a key object that does not print its bytes', () => {
    expect(inspect(key)).not.toContain(keyBytes.toString('hex'));
    expect(inspect(key)).not.toContain(keyBytes.toString('base64'));
  });
});

describe('encryptSecret / decryptSecret', () => {
  it('round-trips and hides the plaintext in a versioned text format', () => {
    const sealed = encryptSecret(secret, key);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret);
    expect(decryptSecret(sealed, key)).toBe(secret);
  });

  it('uses a fresh IV each time', () => {
    expect(encryptSecret(secret, key)).not.toBe(encryptSecret(secret, key));
  });

  it('fails with a wrong key, without revealing the secret', () => {
    const sealed = encryptSecret(secret, key);
    const otherKey = parseEncryptionKey(randomBytes(32).toString('hex'));
    expect(() => decryptSecret(sealed, otherKey)).toThrow(/wrong ENCRYPTION_KEY or the value was altered/);
    try {
      decryptSecret(sealed, otherKey);
    } catch (error) {
      expect(inspect(error)).not.toContain(secret);
    }
  });

  it('fails when any part was altered', () => {
    const sealed = encryptSecret(secret, key);
    const parts = sealed.split('.');
    for (const index of [1, 2, 3]) {
      const altered = [...parts];
      const bytes = Buffer.from(altered[index]!, 'base64url');
      bytes[0] = bytes[0]! ^ 0x01;
      altered[index] = bytes.toString('base64url');
      expect(() => decryptSecret(altered.join('.'), key)).toThrow(SecretBoxError);
    }
  });

  it('refuses malformed values and unknown versions', () => {
    const [, iv, tag, ciphertext] = encryptSecret(secret, key).split('.');
    for (const value of ['', 'v1.abc', `v2.${iv}.${tag}.${ciphertext}`, `v1.${iv}.${tag}.${ciphertext}.extra`, `v1.AAAA.${tag}.${ciphertext}`]) {
      expect(() => decryptSecret(value, key)).toThrow(SecretBoxError);
    }
  });

  it('binds the sealed value to its associated data', () => {
    const sealed = encryptSecret(secret, key, 'whk_one');
    expect(decryptSecret(sealed, key, 'whk_one')).toBe(secret);
    expect(() => decryptSecret(sealed, key, 'whk_two')).toThrow(SecretBoxError);
    expect(() => decryptSecret(sealed, key)).toThrow(SecretBoxError);
  });
});
