// The audit hash chain (ARCHITECTURE.md, the audit capability): each employer's events, in commit order, are
// sealed as hash_n = SHA-256(hash_{n-1} || canonical(event_n)), canonical JSON by RFC 8785, over the
// event as stored (personal data stays the ciphertext it is stored as, so an erasure, which destroys
// a key and changes no event, leaves the chain verifiable). scripts/verify-audit-chain.mjs implements
// the same algorithm without importing this file; test/audit/chain.test.ts holds the two equal.
import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import { keyIdOf } from '../../src/crypto/key-id.ts';
import type { RecordedEvent } from '../../src/event-store/port.ts';

/** prev_hash of the first event of every chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** The sealed fields of an event, as stored and as the replay prints them. */
export type SealedEvent = Pick<RecordedEvent, 'eventId' | 'streamName' | 'type' | 'data' | 'metadata' | 'recordedAt'> & { streamRevision: number };

export function sealedFieldsOf(event: RecordedEvent): SealedEvent {
  return {
    eventId: event.eventId,
    streamName: event.streamName,
    streamRevision: Number(event.streamRevision),
    type: event.type,
    recordedAt: event.recordedAt,
    // As stored, not as reading parsed or upcast it: an upcaster added later must not change a hash.
    metadata: event.stored?.metadata ?? event.metadata,
    data: event.stored?.data ?? event.data,
  };
}

export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error('canonical JSON of undefined');
  return text;
}

/** hex(SHA-256(bytes of prevHash || UTF-8 of the canonical JSON of the sealed fields)). */
export function chainHash(prevHash: string, event: SealedEvent): string {
  return createHash('sha256').update(Buffer.from(prevHash, 'hex')).update(canonicalJson(event), 'utf8').digest('hex');
}

/** What signs checkpoints: the private half of the audit signing key (AUDIT_SIGNING_KEY). */
export type CheckpointSigner = { privateKey: KeyObject };

export type CheckpointClaim = { employerId: string; seq: number; headHash: string; signedAt: string };
export type SignedCheckpoint = CheckpointClaim & { keyId: string; signature: string };

/** What is signed: the UTF-8 of the claim's canonical JSON. */
function checkpointBytes(claim: CheckpointClaim): Buffer {
  return Buffer.from(canonicalJson({ employerId: claim.employerId, seq: claim.seq, headHash: claim.headHash, signedAt: claim.signedAt }), 'utf8');
}

export function signCheckpoint(privateKey: KeyObject, claim: CheckpointClaim): SignedCheckpoint {
  const signature = sign(null, checkpointBytes(claim), privateKey).toString('base64');
  return { ...claim, keyId: keyIdOf(createPublicKey(privateKey)), signature };
}

export function checkpointSignatureHolds(publicKey: KeyObject, checkpoint: SignedCheckpoint): boolean {
  if (checkpoint.keyId !== keyIdOf(publicKey)) return false;
  return verify(null, checkpointBytes(checkpoint), publicKey, Buffer.from(checkpoint.signature, 'base64'));
}
