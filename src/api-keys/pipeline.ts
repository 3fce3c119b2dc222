// The request pipeline of every route that accepts `x-api-key` (core's API-key port, src/auth/ports.ts;
// src/auth/authenticate.ts calls it when the header is present), with the key cache, the shared rate
// limiter and the batched usage recorder of this process. The order of the checks is
// API_KEY_CHECK_ORDER below, which the OpenAPI description repeats.
import type { FastifyRequest } from 'fastify';
import type { StartContext } from '../app-context.ts';
import type { ApiKeys } from '../auth/ports.ts';
import type { Principal, Scope } from '../auth/principal.ts';
import { DomainError } from '../event-store/decider.ts';
import { API_VERSION_HEADER, resolveApiVersion } from '../http/versioning.ts';
import { isAddressAllowed, parseClientAddress } from './cidr.ts';
import { createKeyCache, type CachedKey } from './key-cache.ts';
import { createRateLimiter, type Clock, type RateDecision } from './rate-limiter.ts';
import { hashRawKey, isWellFormedRawKey } from './raw-key.ts';
import { createUsageRecorder } from './usage-recorder.ts';

/** Invalid keys one address may present per minute before its guesses are refused outright. */
export const INVALID_KEY_ATTEMPTS_PER_MIN = 20;
export const FLUSH_INTERVAL_MS = 5_000;

export const API_KEY_CHECK_ORDER = [
  `1. The key exists (in any state), or the client address has not presented ${INVALID_KEY_ATTEMPTS_PER_MIN} invalid keys this minute: else 429 RATE_LIMITED with retry-after.`,
  '   So invalid keys slow down invalid keys only: a key that exists is never refused for what others sent from its address (a load balancer, a shared egress).',
  '2. The key is well formed (mt_live_ and 64 lowercase hex characters) and known: else 401 INVALID_API_KEY.',
  '3. The key is not revoked (by DELETE, or by the end of a roll\'s overlap), and the user who created it is not deactivated: else 401 API_KEY_REVOKED.',
  '4. The key has not expired (expired from the instant expiresAt on): else 401 API_KEY_EXPIRED.',
  '5. The key is not suspended: else 401 API_KEY_INACTIVE.',
  '6. The client address is in the key\'s allowlist, if it has one: else 403 API_KEY_IP_NOT_ALLOWED.',
  '7. The key has a request left in this minute\'s rate limit: else 429 RATE_LIMITED with retry-after.',
  '8. x-api-version is 2026-02-01 or v1: else 400 UNSUPPORTED_API_VERSION.',
  '9. The key holds the scope the route requires: else 403 INSUFFICIENT_SCOPE.',
  '',
  'Permanent states are reported before reversible ones (an expired, suspended key says expired). Steps 1 to 6 are answered',
  'from each server process\'s key cache. A request failing step 8 or 9 has spent a permit of the rate limit. Client addresses come from the socket',
  'unless TRUST_PROXY names trusted proxies; IPv4-mapped IPv6 addresses match IPv4 ranges.',
].join('\n');

export type ApiKeyPipeline = ApiKeys & { stop(): Promise<void> };

export async function startApiKeyPipeline(ctx: StartContext, clock: Clock): Promise<ApiKeyPipeline> {
  const pool = ctx.db.slonik;
  const cache = await createKeyCache({ pool, notifications: ctx.notifications, clock });
  const limiter = createRateLimiter({ pool, clock });
  const recorder = createUsageRecorder({ pool, clock });

  const rateLimitHeaders = (headers: Record<string, string>, decision: RateDecision) => {
    headers['ratelimit-limit'] = String(decision.limit);
    headers['ratelimit-remaining'] = String(decision.remaining);
    headers['ratelimit-reset'] = String(decision.resetSeconds);
    if (!decision.allowed) headers['retry-after'] = String(decision.resetSeconds);
  };
  const rateLimited = (headers: Record<string, string>, decision: RateDecision, message: string) => {
    rateLimitHeaders(headers, decision);
    return new DomainError('too_many', 'RATE_LIMITED', message, { retryAfterSeconds: decision.resetSeconds });
  };

  const authenticate = async (request: FastifyRequest, rawKey: string, scope: Scope | undefined): Promise<Principal> => {
    const headers: Record<string, string> = {};
    request.apiKeyReplyHeaders = headers;
    const address = parseClientAddress(request.ip);
    const clientIp = address?.toString() ?? request.ip;
    const addressBucket = `invalid-ip:${clientIp}`;

    const keyHash = isWellFormedRawKey(rawKey) ? hashRawKey(rawKey) : null;
    // The address's failures hold back guesses only, before they cost a lookup.
    if (keyHash === null || !cache.exists(keyHash)) {
      const addressRefusal = limiter.refusal(addressBucket, INVALID_KEY_ATTEMPTS_PER_MIN);
      if (addressRefusal) throw rateLimited(headers, addressRefusal, 'Too many invalid API keys from this address; retry later.');
    }
    const key = keyHash === null ? null : await cache.find(keyHash);
    if (!key) {
      const attempt = await limiter.take(addressBucket, INVALID_KEY_ATTEMPTS_PER_MIN);
      if (!attempt.allowed) throw rateLimited(headers, attempt, 'Too many invalid API keys from this address; retry later.');
      throw new DomainError('unauthenticated', 'INVALID_API_KEY', 'The API key is malformed or unknown.');
    }
    assertUsable(key, clock());
    if (!isAddressAllowed(address, key.allowlist)) {
      recorder.recordIpRejection(key, clientIp);
      throw new DomainError('forbidden', 'API_KEY_IP_NOT_ALLOWED', `This API key may not be used from ${clientIp}.`);
    }
    const limit = Math.min(key.rateLimitPerMinute ?? ctx.config.API_KEY_RATE_LIMIT_PER_MIN, ctx.config.API_KEY_RATE_LIMIT_MAX_PER_MIN);
    const decision = await limiter.take(`key:${key.id}`, limit);
    if (!decision.allowed) throw rateLimited(headers, decision, 'Rate limit of this API key exceeded; retry later.');
    rateLimitHeaders(headers, decision);
    const apiVersion = resolveApiVersion(request.headers[API_VERSION_HEADER]);
    request.apiVersion = apiVersion;
    headers[API_VERSION_HEADER] = apiVersion;
    if (scope && !key.scopes.includes(scope)) {
      throw new DomainError('forbidden', 'INSUFFICIENT_SCOPE', `This API key lacks the scope ${scope}.`, { requiredScopes: [scope], keyScopes: [...key.scopes] });
    }
    recorder.recordUse(key, clientIp);
    return { kind: 'apiKey', employerId: key.employerId, keyId: key.id, createdBy: key.createdBy, scopes: key.scopes };
  };

  const flush = async () => {
    await recorder.flush();
    await limiter.prune();
  };
  const timer = setInterval(() => {
    flush().catch((error) => ctx.logger.error({ err: error }, 'API key telemetry flush failed; retrying at the next one'));
  }, FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    authenticate,
    invalidate: cache.invalidate,
    flush,
    async stop() {
      clearInterval(timer);
      cache.stop();
      await flush();
    },
  };
}

function assertUsable(key: CachedKey, now: number) {
  if (key.revoked) throw new DomainError('unauthenticated', 'API_KEY_REVOKED', 'The API key has been revoked.');
  if (key.revokesAtMs !== null && now >= key.revokesAtMs) throw new DomainError('unauthenticated', 'API_KEY_REVOKED', 'The API key was rolled and its overlap has ended.');
  if (!key.creatorActive) throw new DomainError('unauthenticated', 'API_KEY_REVOKED', 'The API key is revoked: the user who created it is deactivated.');
  if (key.expiresAtMs !== null && now >= key.expiresAtMs) throw new DomainError('unauthenticated', 'API_KEY_EXPIRED', 'The API key has expired.');
  if (key.suspended) throw new DomainError('unauthenticated', 'API_KEY_INACTIVE', 'The API key is inactive (suspended by an administrator).');
}
