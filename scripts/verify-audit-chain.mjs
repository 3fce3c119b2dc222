#!/usr/bin/env node
// Verifies an employer's audit hash chain offline, from the output of
//   npm run cli -- events replay --tenant <employerId> --format ndjson
// Usage: node scripts/verify-audit-chain.mjs [replay.ndjson] [--public-key <file>]
// (standard input when no file is named). Exit 0 with a summary line when the chain holds; exit 1
// naming the first bad event otherwise; exit 2 for bad usage.
//
// Standalone on purpose: node:crypto and node's standard library only, no import from the service,
// so an auditor can read all of it. The algorithm:
//   sealed(e)  = { eventId, streamName, streamRevision, type, recordedAt, metadata, data } of the event
//   hash_n     = hex(SHA-256(bytes(hash_{n-1}) || UTF-8(canonical(sealed(e_n))))), hash_0 = 64 zeros
//   canonical  = RFC 8785 (JSON Canonicalization Scheme)
//   checkpoint = Ed25519 signature over UTF-8(canonical({ employerId, seq, headHash, signedAt })),
//                keyId = hex(SHA-256(public key as SPKI DER))
// `events verify` in the service runs verifyChain below over the same records.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

export const GENESIS_HASH = '0'.repeat(64);

/**
 * RFC 8785: no whitespace; object members sorted by the UTF-16 code units of their names; strings and
 * numbers serialised as ECMAScript's JSON.stringify does (which is what the RFC specifies for them).
 */
export function canonicalJson(value) {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('RFC 8785 has no form for NaN or Infinity');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  const names = Object.keys(value).filter((name) => value[name] !== undefined).sort();
  return `{${names.map((name) => `${JSON.stringify(name)}:${canonicalJson(value[name])}`).join(',')}}`;
}

export function sealedFieldsOf(record) {
  const { eventId, streamName, streamRevision, type, recordedAt, metadata, data } = record;
  return { eventId, streamName, streamRevision, type, recordedAt, metadata, data };
}

export function chainHash(prevHash, sealed) {
  return createHash('sha256').update(Buffer.from(prevHash, 'hex')).update(canonicalJson(sealed), 'utf8').digest('hex');
}

export function keyIdOf(publicKey) {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
}

function checkpointSignatureHolds(publicKey, checkpoint) {
  const claim = { employerId: checkpoint.employerId, seq: checkpoint.seq, headHash: checkpoint.headHash, signedAt: checkpoint.signedAt };
  try {
    return verify(null, Buffer.from(canonicalJson(claim), 'utf8'), publicKey, Buffer.from(String(checkpoint.signature), 'base64'));
  } catch {
    return false;
  }
}

/** A public key from PEM text or base64 SPKI DER. */
export function parsePublicKey(text) {
  const trimmed = String(text).trim();
  return trimmed.startsWith('-----') ? createPublicKey(trimmed) : createPublicKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'spki' });
}

/**
 * Walks the replay's records (event lines and `{ checkpoint }` lines, in file order) and returns
 * { ok: true, ...summary } or { ok: false, line, eventId, seq, reason, message } for the first bad one.
 * reason: inserted | removed | reordered | changed | chain-altered | checkpoint | tenant | malformed;
 * a removal also gives missingSeq, the first seq missing.
 * `publicKey` (a KeyObject) pins the key checkpoints must be signed with; without it each checkpoint's
 * own `publicKey` is used, and the summary says the key was not pinned.
 */
export async function verifyChain(records, options = {}) {
  const iterator = records[Symbol.asyncIterator] ? records[Symbol.asyncIterator]() : records[Symbol.iterator]();
  let line = 0;
  let employerId = null;
  let firstSeq = null;
  let expectedSeq = null;
  let head = null; // hash of the last verified event
  let events = 0;
  let checkpoints = 0;
  let lastCheckpointSeq = null;
  const keyIds = new Set();
  const fail = (reason, message, event = {}) => ({ ok: false, line, eventId: event.eventId ?? null, seq: event.seq ?? null, reason, message });

  for (;;) {
    const next = await iterator.next();
    if (next.done) break;
    const record = next.value;
    line += 1;
    if (record === null || typeof record !== 'object') return fail('malformed', 'not a JSON object');

    if (record.checkpoint) {
      const checkpoint = record.checkpoint;
      if (checkpoint.employerId !== employerId) return fail('tenant', `checkpoint of employer ${checkpoint.employerId} in the chain of ${employerId}`);
      if (checkpoint.seq !== expectedSeq - 1 || checkpoint.headHash !== head) {
        return fail('checkpoint', `checkpoint at seq ${checkpoint.seq} does not match the chain (head there: ${head} at seq ${expectedSeq - 1})`);
      }
      let publicKey;
      try {
        publicKey = options.publicKey ?? parsePublicKey(checkpoint.publicKey);
      } catch {
        return fail('checkpoint', `checkpoint at seq ${checkpoint.seq} carries no readable public key`);
      }
      if (keyIdOf(publicKey) !== checkpoint.keyId) return fail('checkpoint', `checkpoint at seq ${checkpoint.seq} was signed with key ${checkpoint.keyId}, not with ${keyIdOf(publicKey)}`);
      if (!checkpointSignatureHolds(publicKey, checkpoint)) return fail('checkpoint', `the signature of the checkpoint at seq ${checkpoint.seq} does not verify`);
      keyIds.add(checkpoint.keyId);
      checkpoints += 1;
      lastCheckpointSeq = checkpoint.seq;
      continue;
    }

    const event = record;
    if (typeof event.eventId !== 'string') return fail('malformed', 'neither an event nor a checkpoint');
    const tenant = event.metadata?.tenantId ?? null;
    if (employerId === null) employerId = tenant;
    if (tenant !== employerId) return fail('tenant', `event of employer ${tenant} in the chain of ${employerId}`, event);
    if (event.seq === null || event.seq === undefined) return fail('inserted', `event ${event.eventId} was never sealed: it was inserted outside the append path`, event);
    if (firstSeq === null) {
      firstSeq = event.seq;
      expectedSeq = event.seq;
      // A replay from the first event starts at the genesis hash; one started later (--from) takes its
      // first prevHash on trust, which the summary says.
      head = event.seq === 1 ? GENESIS_HASH : event.prevHash;
    }
    if (event.seq !== expectedSeq) {
      if (event.seq < expectedSeq) return fail('reordered', `event ${event.eventId}, sealed at seq ${event.seq}, comes after seq ${expectedSeq - 1}: events were reordered`, event);
      // A later seq: the event sealed at the expected one is either further on (reordered) or gone.
      const failure = { ...fail('removed', `seq ${expectedSeq} is missing before event ${event.eventId} (seq ${event.seq}): the event sealed at seq ${expectedSeq} was removed`, event), missingSeq: expectedSeq };
      for (;;) {
        const ahead = await iterator.next();
        if (ahead.done) return failure;
        if (ahead.value?.seq === expectedSeq) {
          return { ...failure, reason: 'reordered', message: `event ${event.eventId}, sealed at seq ${event.seq}, comes where seq ${expectedSeq} (event ${ahead.value.eventId}) was sealed: events were reordered` };
        }
      }
    }
    if (event.prevHash !== head) return fail('chain-altered', `event ${event.eventId} (seq ${event.seq}): its stored prevHash is not the hash of seq ${event.seq - 1}: the chain itself was altered`, event);
    if (chainHash(head, sealedFieldsOf(event)) !== event.hash) return fail('changed', `event ${event.eventId} (seq ${event.seq}) is not what was sealed: it was changed`, event);
    head = event.hash;
    expectedSeq = event.seq + 1;
    events += 1;
  }
  if (events === 0) return { ok: false, line, eventId: null, seq: null, reason: 'malformed', message: 'no events' };
  return {
    ok: true,
    employerId,
    events,
    firstSeq,
    headSeq: expectedSeq - 1,
    headHash: head,
    checkpoints,
    lastCheckpointSeq,
    unsignedEvents: expectedSeq - 1 - (lastCheckpointSeq ?? firstSeq - 1),
    keyIds: [...keyIds],
    pinnedKey: Boolean(options.publicKey),
  };
}

export function describeSuccess(result) {
  const from = result.firstSeq === 1 ? '' : ` (from seq ${result.firstSeq}: its prevHash taken on trust)`;
  const signed = result.checkpoints === 0
    ? 'no signed checkpoint in the file'
    : `${result.checkpoints} signed checkpoint(s), the last at seq ${result.lastCheckpointSeq}${result.pinnedKey ? '' : ' (key taken from the file: pass --public-key to pin it)'}`;
  return `OK: ${result.events} events of ${result.employerId}${from}, head seq ${result.headSeq} hash ${result.headHash}; ${signed}; ${result.unsignedEvents} event(s) after the last checkpoint.`;
}

export function describeFailure(result) {
  return `FAILED at line ${result.line}${result.eventId ? `, event ${result.eventId}` : ''}${result.seq === null ? '' : ` (seq ${result.seq})`}: ${result.reason}: ${result.message}`;
}

async function* parsedLines(input) {
  for await (const text of createInterface({ input, crlfDelay: Infinity })) {
    if (text.trim() === '') continue;
    try {
      yield JSON.parse(text);
    } catch {
      yield null;
    }
  }
}

async function main(argv) {
  const args = [...argv];
  let publicKey;
  const keyFlag = args.indexOf('--public-key');
  if (keyFlag !== -1) {
    const file = args[keyFlag + 1];
    if (!file) throw new UsageError('--public-key needs a file (PEM, or base64 SPKI DER)');
    publicKey = parsePublicKey(readFileSync(file, 'utf8'));
    args.splice(keyFlag, 2);
  }
  if (args.length > 1 || args[0]?.startsWith('-')) throw new UsageError('Usage: node scripts/verify-audit-chain.mjs [replay.ndjson] [--public-key <file>]');
  const input = args[0] ? createReadStream(args[0]) : process.stdin;
  const result = await verifyChain(parsedLines(input), { publicKey });
  if (result.ok) {
    console.log(describeSuccess(result));
    return 0;
  }
  console.log(describeFailure(result));
  return 1;
}

class UsageError extends Error {}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (error) => {
      console.error(error.message);
      process.exitCode = error instanceof UsageError ? 2 : 1;
    },
  );
}
