// The SCIM rate limit (SPEC 5.2 rule 5), applied BEFORE the bearer token is looked up, so a flood
// (with or without a valid token) costs no database work once it is over the limit. Two token buckets:
//
// - per presented token (its SHA-256): a valid token belongs to exactly one employer, so this is the
//   per-employer limit. Default 50 requests/s sustained, bursts of 100: twice the 25 requests/s per
//   tenant that Entra ID's gallery asks a SCIM endpoint to allow.
// - per client address, for tokens that are not a current token (missing, malformed, unknown or rotated
//   away; an IPv6 address counts by its /64), spent before the lookup, given back should the lookup
//   find the token after all. Default 5/s sustained, bursts of 50. A current token never draws on it
//   and is never held back by it: Okta and Entra ID call from addresses shared by many tenants, and
//   one client's guesses from such an address must not lock the others out. Whether a token is current
//   is known in memory (src/sso/scim-token.ts), so guesses past the allowance cost no lookup.
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
  /**
   * Before the token is looked up: a token that is not current (or none) spends one of the address's
   * failure allowance; a token spends one request of its own bucket.
   */
  admit(clientAddress: string, bearerToken: string | null, currentToken: boolean): RateVerdict;
  /** After the lookup found a token admitted as not current (it became current meanwhile): its failure is given back. */
  recordAuthenticated(clientAddress: string, currentToken: boolean): void;
};

export function createScimRateLimiter(options: { limits?: ScimRateLimits; clock?: Clock } = {}): ScimRateLimiter {
  const limits = options.limits ?? DEFAULT_SCIM_RATE_LIMITS;
  const perToken = createTokenBuckets(limits.perToken, options.clock);
  const failures = createTokenBuckets(limits.failedAuthPerAddress, options.clock);
  return {
    admit(clientAddress, bearerToken, currentToken) {
      if (!currentToken) {
        const failureVerdict = failures.take(clientAddressKey(clientAddress));
        if (!failureVerdict.allowed) return failureVerdict;
      }
      // A request without a token is held back by its address's failure allowance alone.
      return bearerToken === null ? { allowed: true } : perToken.take(sha256Hex(bearerToken));
    },
    recordAuthenticated(clientAddress, currentToken) {
      if (!currentToken) failures.refund(clientAddressKey(clientAddress));
    },
  };
}
