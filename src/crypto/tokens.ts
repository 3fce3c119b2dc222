// Secrets handed to people and machines (API keys, SCIM tokens, sign-in tokens, session cookies) are
// random, shown once, and stored only as SHA-256 hashes. A hash of 256 random bits needs no salt.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** One-shot `hash` (a third of createHash's cost; every API-key request hashes its key). */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/** Constant-time comparison of two hex digests of equal length. */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
