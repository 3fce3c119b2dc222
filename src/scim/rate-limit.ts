// The SCIM rate limit (SPEC 5.2 rule 5), applied BEFORE the bearer token is looked up, so a flood
// (with or without a valid token) costs no database work once it is over the limit. Two token buckets:
//
// - per presented token (its SHA-256): a valid token belongs to exactly one employer, so this is the
//   per-employer limit. Default 50 requests/s sustained, bursts of 100: twice the 25 requests/s per
//   tenant that Entra ID's gallery asks a SCIM endpoint to allow.
// - per client address, for failed authentications only (missing, malformed, unknown or rotated-away
//   token; an IPv6 address counts by its /64). Default 5/s sustained, bursts of 50. Successful requests do not draw on it: Okta and
//   Entra ID call from shared addresses on behalf of many tenants, which must not throttle each other.
//
// Buckets live in the memory of each API process: with N processes the ceiling is N times these
// numbers (see src/http/token-buckets.ts).
import { sha256Hex } from '../crypto/tokens.ts';
import { clientAddressKey, createTokenBuckets, type Clock, type RateVerdict, type TokenBucketLimit } from '../http/token-buckets.ts';

export type { Clock } from '../http/token-buckets.ts';
export type ScimRateLimits = { perToken: TokenBucketLimit; failedAuthPerAddress: TokenBucketLimit };

export const DEFAULT_SCIM_RATE_LIMITS: ScimRateLimits = {
  perToken: { perSecond: 50, burst: 100 },
  failedAuthPerAddress: { perSecond: 5, burst: 50 },
};

export type ScimRateLimiter = {
  /** Before the token is looked up: spends one request of the token's bucket, checks the address's failures. */
  admit(clientAddress: string, bearerToken: string | null): RateVerdict;
  /** After the token failed: spends one of the address's failed-authentication allowance. */
  recordFailedAuthentication(clientAddress: string): void;
};

export function createScimRateLimiter(options: { limits?: ScimRateLimits; clock?: Clock } = {}): ScimRateLimiter {
  const limits = options.limits ?? DEFAULT_SCIM_RATE_LIMITS;
  const perToken = createTokenBuckets(limits.perToken, options.clock);
  const failures = createTokenBuckets(limits.failedAuthPerAddress, options.clock);
  return {
    admit(clientAddress, bearerToken) {
      const failureVerdict = failures.peek(clientAddressKey(clientAddress));
      if (!failureVerdict.allowed) return failureVerdict;
      // A request without a token is held back by its address's failure allowance alone.
      return bearerToken === null ? { allowed: true } : perToken.take(sha256Hex(bearerToken));
    },
    recordFailedAuthentication(clientAddress) {
      failures.take(clientAddressKey(clientAddress));
    },
  };
}
