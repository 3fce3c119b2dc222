// SCIM bearer tokens: `scim_` + 256 random bits, shown once, stored only as SHA-256 (event and read
// model). A lookup compares hashes by index: timing can reveal at most something about a hash of a
// random secret, never about the secret, so no constant-time loop over candidates is needed.
import { randomUUID } from 'node:crypto';
import { SCIM_TOKENS_CHANGED_CHANNEL } from '../../projections/sso/projection.ts';
import { findScimTokenOwner } from '../../projections/sso/queries.ts';
import type { AppContext } from '../app-context.ts';
import { createNotifiedCache, type NotifiedCache } from '../db/notified-cache.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';

export const SCIM_TOKEN_PREFIX = 'scim_';
const SCIM_TOKEN_SHAPE = /^scim_[A-Za-z0-9_-]{43}$/;

export function newScimToken(): { token: string; tokenId: string; tokenHash: string } {
  const token = `${SCIM_TOKEN_PREFIX}${randomToken(32)}`;
  return { token, tokenId: randomUUID(), tokenHash: sha256Hex(token) };
}

type TokenOwner = { employerId: string; tokenId: string };

export type ScimTokenCache = NotifiedCache<TokenOwner | null>;

/**
 * Lookups are cached per process by token hash, unknown hashes too (src/db/notified-cache.ts). Every
 * change to an SSO configuration clears the cache in every process (NOTIFY from projections/sso/projection.ts),
 * so a rotated or disabled token fails as soon as the change is in the read model. Created once at
 * start-up by the sso capability (ctx.scimTokens).
 */
export function createScimTokenCache(ctx: AppContext): Promise<ScimTokenCache> {
  return createNotifiedCache({
    notifications: ctx.notifications,
    channel: SCIM_TOKENS_CHANGED_CHANNEL,
    ttlMs: 60_000,
    maxEntries: 10_000,
    load: async (hash) => {
      const row = await findScimTokenOwner(ctx.db.slonik, hash);
      return row ? { employerId: row.employer_id, tokenId: row.scim_token_id } : null;
    },
  });
}

/**
 * The employer whose current SCIM token `rawToken` is, or null (malformed, unknown, rotated away, or
 * SCIM disabled). For the SCIM routes' authentication; the rate limit comes before this call.
 */
export async function findEmployerByScimToken(ctx: AppContext, rawToken: string): Promise<TokenOwner | null> {
  if (!SCIM_TOKEN_SHAPE.test(rawToken)) return null;
  if (!ctx.scimTokens) throw new Error('SCIM token lookup needs the sso capability');
  return ctx.scimTokens.get(sha256Hex(rawToken));
}
