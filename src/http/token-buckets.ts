// Token buckets kept in the memory of one process, one per key (a token's hash, a client address),
// for limits that must hold before anything touches the database. The map is bounded: the least
// recently used buckets are dropped first.
import type { FastifyReply } from 'fastify';
import ipaddr from 'ipaddr.js';
import { DomainError } from '../event-store/decider.ts';

export type TokenBucketLimit = { perSecond: number; burst: number };

/** Milliseconds since some fixed instant (Date.now by default; tests freeze it). */
export type Clock = () => number;

export type RateVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** A refused verdict becomes 429 RATE_LIMITED with retry-after; `what` says what there was too much of. */
export function assertAllowed(verdict: RateVerdict, reply: FastifyReply, what: string): void {
  if (verdict.allowed) return;
  reply.header('retry-after', String(verdict.retryAfterSeconds));
  throw new DomainError('too_many', 'RATE_LIMITED', `${what}; retry in ${verdict.retryAfterSeconds} s.`);
}

/**
 * The bucket key of a client address for limits per client: an IPv4 address alone (IPv4-mapped IPv6
 * as the IPv4 address it maps), an IPv6 address by its /64, the smallest block a subscriber is
 * given, so one client cannot multiply its allowance by rotating through 2^64 addresses.
 */
export function clientAddressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const parts = (address as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

const MAX_BUCKETS = 50_000;

type Bucket = { tokens: number; updatedAt: number };

export type TokenBuckets = {
  /** Checks without spending; a key that never spent has no bucket (and gets none). */
  peek(key: string): RateVerdict;
  /** Spends one token of the key's bucket if it has one. */
  take(key: string): RateVerdict;
  /** Gives back a token taken for a request that turned out not to count (up to the burst). */
  refund(key: string): void;
};

export function createTokenBuckets(limit: TokenBucketLimit, clock: Clock = Date.now): TokenBuckets {
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
    peek: (key) => (buckets.has(key) ? verdict(refreshed(key)) : { allowed: true }),
    take(key) {
      const bucket = refreshed(key);
      const result = verdict(bucket);
      if (result.allowed) bucket.tokens -= 1;
      return result;
    },
    refund(key) {
      if (!buckets.has(key)) return;
      const bucket = refreshed(key);
      bucket.tokens = Math.min(limit.burst, bucket.tokens + 1);
    },
  };
}
