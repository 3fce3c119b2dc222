// The SCIM rate limit (SPEC 5.2 rule 5), applied BEFORE the bearer token is looked up, so a flood
// (with or without a valid token) costs no database work once it is over the limit. Two token buckets:
//
// - per presented token (its SHA-256): a valid token belongs to exactly one employer, so this is the
//   per-employer limit. Default 50 requests/s sustained, bursts of 100: twice the 25 requests/s per
//   tenant that Entra ID's gallery asks a SCIM endpoint to allow.
// - per client address, for failed authentications only (missing, malformed, unknown or rotated-away
//   token). Default 5/s sustained, bursts of 50. Successful requests do not draw on it: Okta and
//   Entra ID call from shared addresses on behalf of many tenants, which must not throttle each other.
//
// Buckets live in the memory of each API process: with N processes the ceiling is N times these
// numbers. The maps are bounded (least recently used buckets are dropped first).
import { sha256Hex } from '../crypto/tokens.ts';

export type TokenBucketLimit = { perSecond: number; burst: number };
export type ScimRateLimits = { perToken: TokenBucketLimit; failedAuthPerAddress: TokenBucketLimit };

export const DEFAULT_SCIM_RATE_LIMITS: ScimRateLimits = {
  perToken: { perSecond: 50, burst: 100 },
  failedAuthPerAddress: { perSecond: 5, burst: 50 },
};

/** Milliseconds since some fixed instant (Date.now by default; tests freeze it). */
export type Clock = () => number;

export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export type ScimRateLimiter = {
  /** Before the token is looked up: spends one request of the token's bucket, checks the address's failures. */
  admit(clientAddress: string, bearerToken: string | null): RateVerdict;
  /** After the token failed: spends one of the address's failed-authentication allowance. */
  recordFailedAuthentication(clientAddress: string): void;
};

const MAX_BUCKETS = 50_000;

type Bucket = { tokens: number; updatedAt: number };

export function createScimRateLimiter(options: { limits?: ScimRateLimits; clock?: Clock } = {}): ScimRateLimiter {
  const limits = options.limits ?? DEFAULT_SCIM_RATE_LIMITS;
  const clock = options.clock ?? Date.now;
  const perToken = bucketSet(limits.perToken, clock);
  const failures = bucketSet(limits.failedAuthPerAddress, clock);
  return {
    admit(clientAddress, bearerToken) {
      const failureVerdict = failures.peek(clientAddress);
      if (!failureVerdict.allowed) return failureVerdict;
      // A request without a token is held back by its address's failure allowance alone.
      return bearerToken === null ? { allowed: true } : perToken.take(sha256Hex(bearerToken));
    },
    recordFailedAuthentication(clientAddress) {
      failures.take(clientAddress);
    },
  };
}

function bucketSet(limit: TokenBucketLimit, clock: Clock) {
  const buckets = new Map<string, Bucket>();
  const refreshed = (key: string): Bucket => {
    const now = clock();
    const existing = buckets.get(key);
    const bucket = existing
      ? { tokens: Math.min(limit.burst, existing.tokens + ((now - existing.updatedAt) / 1000) * limit.perSecond), updatedAt: now }
      : { tokens: limit.burst, updatedAt: now };
    // Re-inserting keeps the Map in least-recently-used order.
    buckets.delete(key);
    buckets.set(key, bucket);
    if (buckets.size > MAX_BUCKETS) buckets.delete(buckets.keys().next().value!);
    return bucket;
  };
  const verdict = (bucket: Bucket): RateVerdict =>
    bucket.tokens >= 1 ? { allowed: true } : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond)) };
  return {
    /** Checks without spending; an address that never failed has no bucket (and gets none). */
    peek: (key: string): RateVerdict => (buckets.has(key) ? verdict(refreshed(key)) : { allowed: true }),
    take(key: string): RateVerdict {
      const bucket = refreshed(key);
      const result = verdict(bucket);
      if (result.allowed) bucket.tokens -= 1;
      return result;
    },
  };
}
