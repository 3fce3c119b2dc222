// The raw key: `mt_live_` followed by 64 lowercase hex characters (256 bits from the CSPRNG; the
// prefix is not part of the 64). Only its SHA-256 is stored. The first 8 hex characters are kept as
// `keyPrefix` so people can recognise a key in a list; 32 of 256 bits do not help anyone use it.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../crypto/tokens.ts';

export const RAW_KEY_PREFIX = 'mt_live_';
const RAW_KEY_FORMAT = /^mt_live_[0-9a-f]{64}$/;
const DISPLAY_PREFIX_LENGTH = 8;

export function generateRawKey(): string {
  return RAW_KEY_PREFIX + randomBytes(32).toString('hex');
}

export function isWellFormedRawKey(value: string): boolean {
  return RAW_KEY_FORMAT.test(value);
}

export function hashRawKey(rawKey: string): string {
  return sha256Hex(rawKey);
}

export function displayPrefixOf(rawKey: string): string {
  return rawKey.slice(RAW_KEY_PREFIX.length, RAW_KEY_PREFIX.length + DISPLAY_PREFIX_LENGTH);
}
