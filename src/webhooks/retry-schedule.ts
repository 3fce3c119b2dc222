// When a failed delivery is tried again. Svix's schedule: after about 5 s, 5 min, 30 min, 2 h and
// 5 h, i.e. 1, 60, 360, 1440 and 3600 times WEBHOOK_RETRY_BASE_MS (5000 by default; tests use a few
// ms). graphile-worker's own backoff (exp(attempts) seconds) cannot express this, so each retry is
// a job scheduled explicitly with runAt.

const RETRY_MULTIPLIERS = [1, 60, 360, 1440, 3600] as const;

/** 1 first attempt + SPEC section 8's "up to 5" retries. */
export const MAX_ATTEMPTS = 1 + RETRY_MULTIPLIERS.length;

/** Spreads retries of many deliveries that failed together (an outage) by +-20 %. */
const JITTER = 0.2;

/** A receiver's Retry-After is honoured up to this long; beyond it the usual schedule applies. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * Delay before attempt `attempt + 1` after attempt `attempt` (1-based) failed, or null when that was
 * the final attempt. A Retry-After (429/503) is honoured when it asks for longer than the schedule.
 */
export function retryDelayMs(attempt: number, options: { baseMs: number; retryAfterMs: number | null; random?: () => number }): number | null {
  const multiplier = RETRY_MULTIPLIERS[attempt - 1];
  if (multiplier === undefined) return null;
  const random = options.random ?? Math.random;
  const scheduled = Math.round(options.baseMs * multiplier * (1 - JITTER + 2 * JITTER * random()));
  const asked = options.retryAfterMs === null ? 0 : Math.min(options.retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.max(scheduled, asked);
}
