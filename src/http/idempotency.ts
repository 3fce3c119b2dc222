// Idempotency-Key on routes declared `idempotent: true` (POSTs that create something), with Stripe's
// semantics. Keys are scoped to the employer; the first request with a key claims it in
// `idempotency_keys` (one statement, so two requests racing with one key cannot both run), runs, and
// stores its response. Within 24 hours a retry with the same key and the same request gets that
// response again (status, body, Location; plus `idempotent-replayed: true`) and runs nothing; the same
// key with another request is 422 IDEMPOTENCY_KEY_REUSED; while the first still runs, 409
// IDEMPOTENCY_KEY_IN_USE.
//
// What is stored: whatever the handler answered, errors included (as Stripe: once execution began,
// a retry must never execute again; a 5xx may have come after the write). Requests refused before the
// handler (authentication, 400 validation, the two errors above) store nothing.
// The key is stored as its SHA-256 only, and the response sealed with ENCRYPTION_KEY (AES-256-GCM):
// creation responses carry a secret shown once (rawKey, signingSecret), and the replay is the
// identical response, as Stripe's is.
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { decryptSecret, encryptSecret } from '../crypto/secret-box.ts';
import { DomainError } from '../event-store/decider.ts';
import { defaultErrorShape, toServiceError, validationError, type ErrorShape } from './errors.ts';

const HEADER = 'idempotency-key';
const KEY_TTL = '24 hours';
/**
 * A claim whose request never stored a response (its process died mid-request) may be taken over by
 * a retry of the same request after this long: far longer than any request runs.
 */
const ABANDONED_CLAIM_AFTER = '5 minutes';
/** Response headers a replay repeats. */
const REPLAYED_HEADERS = ['location', 'cache-control', 'content-type'] as const;

export const idempotencyKeyHeaders = z.object({
  [HEADER]: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x20-\x7e]*$/, 'printable ASCII characters only')
    .optional()
    .meta({
      description:
        'Any unique value (a UUID, say), 1 to 255 printable characters. A retry with the same key and the same request within 24 hours ' +
        'returns the first response again (header idempotent-replayed: true) and changes nothing; the same key with another request is ' +
        '422 IDEMPOTENCY_KEY_REUSED; while the first request runs, 409 IDEMPOTENCY_KEY_IN_USE. Keys are scoped to the employer.',
    }),
});

/** The answers an Idempotency-Key adds to a route, by status (documented in the route's error shape). */
export const idempotencyResponses: Record<number, string> = {
  409: 'IDEMPOTENCY_KEY_IN_USE: a request with this Idempotency-Key is still running; retry later',
  422: 'IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used with another request',
};

type StoredResponse = { status: number; headers: Record<string, string>; body: unknown };

type Claim = { employerId: string; keyHash: string; claimId: string };

/**
 * Runs `execute` at most once per employer and Idempotency-Key; without the header, simply runs it.
 * `execute` returns the body (or sends the reply itself, for a body-less answer).
 */
export async function runIdempotently(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  /** Whose keys these are (the employer) and who calls (a user, an API key, a platform token). */
  owner: { employerId: string; caller: string },
  errorShape: ErrorShape | undefined,
  execute: () => Promise<unknown>,
): Promise<unknown> {
  const parsed = idempotencyKeyHeaders.safeParse({ [HEADER]: request.headers[HEADER] });
  if (!parsed.success) throw validationError(parsed.error, 'headers');
  const key = parsed.data[HEADER];
  if (key === undefined) return execute();

  const claim = { employerId: owner.employerId, keyHash: sha256(key), claimId: randomUUID() };
  const requestHash = sha256(canonicalJson({
    method: request.method,
    route: request.routeOptions.url,
    params: request.params ?? null,
    // Another caller of the same employer reusing a key gets 422, never this caller's response.
    caller: owner.caller,
    body: request.body ?? null,
  }));

  // A retry races only with an expiry or an abandoned claim between the two statements: one more round.
  for (let round = 0; round < 2; round++) {
    if (await tryClaim(ctx, claim, requestHash)) return executeAndStore(ctx, claim, request, reply, errorShape, execute);
    const existing = await ctx.db.slonik.maybeOne(sql.type(z.object({ request_hash: z.string(), response_status: z.number().nullable(), sealed_response: z.string().nullable() }))`
      SELECT request_hash, response_status, sealed_response FROM idempotency_keys
      WHERE employer_id = ${claim.employerId} AND key_hash = ${claim.keyHash} AND expires_at > now()`);
    if (!existing) continue;
    if (existing.request_hash !== requestHash) {
      throw new DomainError('unprocessable', 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with another request; use a new key for a new request.');
    }
    if (existing.response_status === null || existing.sealed_response === null) {
      throw new DomainError('conflict', 'IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still running; retry once it has finished.');
    }
    const stored = JSON.parse(decryptSecret(existing.sealed_response, ctx.encryptionKey, associatedData(claim))) as StoredResponse;
    reply.status(stored.status).headers(stored.headers).header('idempotent-replayed', 'true');
    return stored.body === undefined ? reply.send() : stored.body;
  }
  throw new DomainError('conflict', 'IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still running; retry once it has finished.');
}

/** Inserts the claim, or takes over an expired row or an abandoned claim of the same request. */
async function tryClaim(ctx: AppContext, claim: Claim, requestHash: string): Promise<boolean> {
  // Expired rows go on the next claim, like the SAML stores' (no sweeper job; creates are rare).
  await ctx.db.slonik.query(sql.unsafe`DELETE FROM idempotency_keys WHERE expires_at <= now()`);
  const claimed = await ctx.db.slonik.maybeOne(sql.type(z.object({ claim_id: z.string() }))`
    INSERT INTO idempotency_keys AS k (employer_id, key_hash, request_hash, claim_id, expires_at)
    VALUES (${claim.employerId}, ${claim.keyHash}, ${requestHash}, ${claim.claimId}, now() + ${KEY_TTL}::interval)
    ON CONFLICT (employer_id, key_hash) DO UPDATE
      SET request_hash = EXCLUDED.request_hash, claim_id = EXCLUDED.claim_id, response_status = NULL, sealed_response = NULL,
          created_at = now(), expires_at = EXCLUDED.expires_at
      WHERE k.expires_at <= now()
         OR (k.response_status IS NULL AND k.request_hash = EXCLUDED.request_hash AND k.created_at <= now() - ${ABANDONED_CLAIM_AFTER}::interval)
    RETURNING claim_id`);
  return claimed !== null;
}

async function executeAndStore(
  ctx: AppContext,
  claim: Claim,
  request: FastifyRequest,
  reply: FastifyReply,
  errorShape: ErrorShape | undefined,
  execute: () => Promise<unknown>,
): Promise<unknown> {
  let body: unknown;
  try {
    body = await execute();
  } catch (error) {
    // Stored as the error handler will answer it: the same shape, from the same request.
    const serviceError = toServiceError(error);
    const shaped = (errorShape ?? defaultErrorShape)(serviceError, request);
    await store(ctx, claim, { status: serviceError.status, headers: shaped.contentType ? { 'content-type': shaped.contentType } : {}, body: shaped.body });
    throw error;
  }
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  // A handler that sent its reply itself sends no body (202, 204).
  await store(ctx, claim, { status: reply.statusCode, headers, body: reply.sent ? undefined : body });
  return body;
}

async function store(ctx: AppContext, claim: Claim, response: StoredResponse): Promise<void> {
  const sealed = encryptSecret(JSON.stringify(response), ctx.encryptionKey, associatedData(claim));
  await ctx.db.slonik.query(sql.unsafe`
    UPDATE idempotency_keys SET response_status = ${response.status}, sealed_response = ${sealed}
    WHERE employer_id = ${claim.employerId} AND key_hash = ${claim.keyHash} AND claim_id = ${claim.claimId}`);
}

/** Binds a sealed response to its row: copied onto another employer's or key's row it does not open. */
function associatedData(claim: Claim): string {
  return `${claim.employerId}:${claim.keyHash}`;
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** JSON with object keys sorted, so a retry whose body lists the same fields in another order matches. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}
