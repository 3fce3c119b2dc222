// Fixed one-minute windows shared by every process through Postgres, without a write per request.
// Each process leases permits for a bucket from the window's row (`api_key_rate_windows`) in one
// atomic upsert that never grants past the limit, then spends them from memory; when its lease runs
// out it asks for another, and when the row grants nothing the bucket is refused locally until the
// window ends. So a key never gets more than its limit in a window, whatever the number of processes
// (slack: zero). The cost is the other way: permits leased by a process that then goes quiet are not
// used by the others, so a key busy in one process may be refused up to (processes - 1) x (lease - 1)
// requests early. The lease is a twentieth of the limit (6 for the default 120), and the usual
// fixed-window caveat holds: a burst straddling two windows can reach twice the limit within a minute.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export type Clock = () => number;
export type RateDecision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

export const WINDOW_MS = 60_000;
const LEASE_FRACTION = 20;
/** Rows of windows this old are deleted by `prune` (they no longer limit anything). */
const KEEP_WINDOWS_MS = 5 * WINDOW_MS;

type BucketState = {
  windowStart: number;
  /** Permits leased by this process and not spent yet. */
  leaseLeft: number;
  /** The window's total `used` at our last lease: permits granted to all processes. */
  usedEverywhere: number;
  exhausted: boolean;
  leasing: Promise<void> | null;
};

const grantRow = z.object({ last_grant: z.number(), used: z.number() });

export type RateLimiter = {
  /** Spends one permit of `bucket` if the window has one left. */
  take(bucket: string, limit: number): Promise<RateDecision>;
  /** The refusal to answer when `bucket` has already been refused in the current window (no database access). */
  refusal(bucket: string, limit: number): RateDecision | null;
  /** Forgets finished windows in memory and deletes old window rows. */
  prune(): Promise<void>;
};

export function createRateLimiter(deps: { pool: DatabasePool; clock: Clock }): RateLimiter {
  const buckets = new Map<string, BucketState>();

  const current = (bucket: string): BucketState => {
    const now = deps.clock();
    const windowStart = now - (now % WINDOW_MS);
    let state = buckets.get(bucket);
    if (!state || state.windowStart !== windowStart) {
      state = { windowStart, leaseLeft: 0, usedEverywhere: 0, exhausted: false, leasing: null };
      buckets.set(bucket, state);
    }
    return state;
  };

  const decision = (state: BucketState, allowed: boolean, limit: number): RateDecision => ({
    allowed,
    limit,
    remaining: Math.max(0, limit - state.usedEverywhere) + state.leaseLeft,
    resetSeconds: Math.max(1, Math.ceil((state.windowStart + WINDOW_MS - deps.clock()) / 1000)),
  });

  const lease = async (bucket: string, state: BucketState, limit: number) => {
    const want = Math.max(1, Math.ceil(limit / LEASE_FRACTION));
    const row = await deps.pool.one(sql.type(grantRow)`
      INSERT INTO api_key_rate_windows (bucket, window_start, used, last_grant)
      VALUES (${bucket}, ${new Date(state.windowStart).toISOString()}::timestamptz, LEAST(${want}::int, ${limit}::int), LEAST(${want}::int, ${limit}::int))
      ON CONFLICT (bucket, window_start) DO UPDATE SET
        last_grant = LEAST(${want}::int, GREATEST(${limit}::int - api_key_rate_windows.used, 0)),
        used = api_key_rate_windows.used + LEAST(${want}::int, GREATEST(${limit}::int - api_key_rate_windows.used, 0))
      RETURNING last_grant, used`);
    state.leaseLeft += row.last_grant;
    state.usedEverywhere = row.used;
    if (row.last_grant === 0) state.exhausted = true;
  };

  return {
    async take(bucket, limit) {
      const state = current(bucket);
      // Requests arriving while a lease is requested wait for that one request instead of sending their own.
      while (state.leaseLeft === 0 && !state.exhausted) {
        state.leasing ??= lease(bucket, state, limit).finally(() => (state.leasing = null));
        await state.leasing;
      }
      const allowed = state.leaseLeft > 0;
      if (allowed) state.leaseLeft -= 1;
      return decision(state, allowed, limit);
    },
    refusal(bucket, limit) {
      const state = buckets.get(bucket);
      const now = deps.clock();
      const refused = state !== undefined && state.exhausted && state.leaseLeft === 0 && state.windowStart === now - (now % WINDOW_MS);
      return refused ? decision(state, false, limit) : null;
    },
    async prune() {
      const now = deps.clock();
      const windowStart = now - (now % WINDOW_MS);
      for (const [bucket, state] of buckets) if (state.windowStart < windowStart && !state.leasing) buckets.delete(bucket);
      await deps.pool.query(sql.unsafe`DELETE FROM api_key_rate_windows WHERE window_start < ${new Date(now - KEEP_WINDOWS_MS).toISOString()}::timestamptz`);
    },
  };
}
