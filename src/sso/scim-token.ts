// SCIM bearer tokens: `scim_` + 256 random bits, shown once, stored only as SHA-256 (event and read
// model). A lookup compares hashes by index: timing can reveal at most something about a hash of a
// random secret, never about the secret, so no constant-time loop over candidates is needed.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';

export const SCIM_TOKEN_PREFIX = 'scim_';
const SCIM_TOKEN_SHAPE = /^scim_[A-Za-z0-9_-]{43}$/;

export function newScimToken(): { token: string; tokenId: string; tokenHash: string } {
  const token = `${SCIM_TOKEN_PREFIX}${randomToken(32)}`;
  return { token, tokenId: randomUUID(), tokenHash: sha256Hex(token) };
}

const tokenOwner = z.object({ employer_id: z.string(), scim_token_id: z.string() });

export const SCIM_TOKENS_CHANGED_CHANNEL = 'scim_tokens_changed';
const CACHE_TTL_MS = 60_000;
const CACHE_MAX_ENTRIES = 10_000;

type TokenOwner = { employerId: string; tokenId: string };
type TokenCache = { entries: Map<string, { owner: TokenOwner | null; loadedAt: number }>; generation: number; listening: Promise<unknown> };

/**
 * Lookups are cached per process by token hash, unknown hashes too (bounded). Every change to an SSO
 * configuration clears the cache in every process (NOTIFY from projections/sso.ts), so a rotated or
 * disabled token fails as soon as the change is in the read model; entries are also reloaded after a
 * minute, and a lost LISTEN connection clears everything.
 */
const caches = new WeakMap<AppContext, TokenCache>();

function cacheOf(ctx: AppContext): TokenCache {
  let cache = caches.get(ctx);
  if (!cache) {
    const created: TokenCache = { entries: new Map(), generation: 0, listening: Promise.resolve() };
    const clear = () => {
      created.entries.clear();
      created.generation++;
    };
    created.listening = ctx.notifications.listen(SCIM_TOKENS_CHANGED_CHANNEL, clear);
    caches.set(ctx, (cache = created));
  }
  return cache;
}

/**
 * The employer whose current SCIM token `rawToken` is, or null (malformed, unknown, rotated away, or
 * SCIM disabled). For the SCIM routes' authentication; the rate limit comes before this call.
 */
export async function findEmployerByScimToken(ctx: AppContext, rawToken: string): Promise<TokenOwner | null> {
  if (!SCIM_TOKEN_SHAPE.test(rawToken)) return null;
  const hash = sha256Hex(rawToken);
  const cache = cacheOf(ctx);
  await cache.listening; // nothing is cached before changes can be heard
  const cached = cache.entries.get(hash);
  if (cached && Date.now() - cached.loadedAt < CACHE_TTL_MS) return cached.owner;
  const generation = cache.generation;
  const row = await ctx.db.slonik.maybeOne(sql.type(tokenOwner)`
    SELECT employer_id, scim_token_id FROM sso_configurations
    WHERE scim_token_hash = ${hash} AND scim_enabled AND scim_token_id IS NOT NULL`);
  const owner = row ? { employerId: row.employer_id, tokenId: row.scim_token_id } : null;
  // A change that landed while this read was under way may have made it stale: do not keep it.
  if (generation === cache.generation) {
    if (cache.entries.size >= CACHE_MAX_ENTRIES) cache.entries.clear();
    cache.entries.set(hash, { owner, loadedAt: Date.now() });
  }
  return owner;
}
