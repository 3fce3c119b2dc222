// Types of scripts/verify-audit-chain.mjs for the service's `events verify`, which runs the same code.
import type { KeyObject } from 'node:crypto';

export const GENESIS_HASH: string;
export function canonicalJson(value: unknown): string;
export function chainHash(prevHash: string, sealed: unknown): string;
export function keyIdOf(publicKey: KeyObject): string;
export function parsePublicKey(text: string): KeyObject;
export type ChainVerified = {
  ok: true; employerId: string; events: number; firstSeq: number; headSeq: number; headHash: string;
  checkpoints: number; lastCheckpointSeq: number | null; unsignedEvents: number; keyIds: string[]; pinnedKey: boolean;
};
export type ChainBroken = {
  ok: false; line: number; eventId: string | null; seq: number | null;
  reason: 'inserted' | 'removed' | 'reordered' | 'changed' | 'chain-altered' | 'checkpoint' | 'tenant' | 'malformed'; message: string;
  /** For a removal: the first seq missing. */
  missingSeq?: number;
};
export function verifyChain(records: AsyncIterable<unknown> | Iterable<unknown>, options?: { publicKey?: KeyObject }): Promise<ChainVerified | ChainBroken>;
export function describeSuccess(result: ChainVerified): string;
export function describeFailure(result: ChainBroken): string;
