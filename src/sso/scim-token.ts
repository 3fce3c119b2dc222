// SCIM bearer tokens: `scim_` + 256 random bits, shown once, stored only as SHA-256 (event and read
// model). A lookup compares hashes by index: timing can reveal at most something about a hash of a
// random secret, never about the secret, so no constant-time loop over candidates is needed.
import { randomUUID } from 'node:crypto';
import { SCIM_TOKENS_CHANGED_CHANNEL } from '../../projections/sso/projection.ts';
import { findScimTokenOwner, workingScimTokenHashes } from '../../projections/sso/queries.ts';
import type { StartContext } from '../app-context.ts';
import type { ScimTokens } from '../auth/ports.ts';
import { createNotifiedCache, type NotifiedCache } from '../db/notified-cache.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';

export const SCIM_TOKEN_PREFIX = 'scim_';
const SCIM_TOKEN_SHAPE = /^scim_[A-Za-z0-9_-]{43}$/;

export function newScimToken(): { token: string; tokenId: string; tokenHash: string } {
  const token = `${SCIM_TOKEN_PREFIX}${randomToken(32)}`;
  return { token, tokenId: randomUUID(), tokenHash: sha256Hex(token) };
}

/** `validUntilMs`: null for the current token; for the one a rotation replaced, the end of its overlap. */
type TokenOwner = { employerId: string; tokenId: string; validUntilMs: number | null };

export type ScimTokenCache = NotifiedCache<TokenOwner | null> & {
  /** Whether `tokenHash` is the hash of a working SCIM token, without a database read (waits for a reload under way). */
  exists(tokenHash: string): Promise<boolean>;
};

/** A replaced token works until its overlap ends, whatever the cache holds: its end is checked at every use. */
const stillWorks = (validUntilMs: number | null) => validUntilMs === null || Date.now() < validUntilMs;

/**
 * Lookups are cached per process by token hash, unknown hashes too (src/db/notified-cache.ts). Every
 * change to an SSO configuration clears the cache in every process (NOTIFY from projections/sso/projection.ts),
 * so a disabled token fails as soon as the change is in the read model. A rotation keeps the token it
 * replaced working until its overlap ends (src/sso/sso-configuration.ts): an end no notification
 * announces, so each use compares it with the clock. The process also holds the hashes of all working
 * tokens (one or two per employer with SCIM), read at start-up and again on each such change, so the
 * rate limit tells a real token from a guess before any lookup. Created once
 * per process by the sso capability's start, behind core's SCIM-token port (scimTokenLookup).
 */
export async function createScimTokenCache(ctx: StartContext): Promise<ScimTokenCache> {
  const readWorking = async () => new Map((await workingScimTokenHashes(ctx.db.slonik)).map((row) => [row.token_hash, validUntilMs(row.valid_until)]));
  let working = await readWorking();
  // Reloads asked for while one runs are served by one more run, which reads after them.
  let asked = 0;
  let reloading: Promise<void> | null = null;
  const reload = () => {
    asked += 1;
    reloading ??= (async () => {
      for (let served = 0; served < asked; ) {
        const serving = asked;
        working = await readWorking();
        served = serving;
      }
    })().finally(() => {
      asked = 0;
      reloading = null;
    });
    reloading.catch((error: unknown) => ctx.logger.error({ err: error }, 'reading the current SCIM tokens failed; the next change reads them again'));
  };
  const stopListening = await ctx.notifications.listen(SCIM_TOKENS_CHANGED_CHANNEL, reload);
  const cache = await createNotifiedCache<TokenOwner | null>({
    notifications: ctx.notifications,
    channel: SCIM_TOKENS_CHANGED_CHANNEL,
    ttlMs: 60_000,
    maxEntries: 10_000,
    load: async (hash) => {
      const row = await findScimTokenOwner(ctx.db.slonik, hash);
      return row ? { employerId: row.employer_id, tokenId: row.token_id, validUntilMs: validUntilMs(row.valid_until) } : null;
    },
  });
  return {
    ...cache,
    async exists(tokenHash) {
      await reloading?.catch(() => {});
      const validUntil = working.get(tokenHash);
      return validUntil !== undefined && stillWorks(validUntil);
    },
    stop() {
      stopListening();
      cache.stop();
    },
  };
}

const validUntilMs = (validUntil: string | null) => (validUntil === null ? null : Date.parse(validUntil));

/** Core's SCIM-token port over the cache: a malformed token is refused before any lookup. */
export function scimTokenLookup(cache: ScimTokenCache): ScimTokens {
  return {
    isCurrent: async (rawToken) => SCIM_TOKEN_SHAPE.test(rawToken) && cache.exists(sha256Hex(rawToken)),
    ownerOf: async (rawToken) => {
      if (!SCIM_TOKEN_SHAPE.test(rawToken)) return null;
      const owner = await cache.get(sha256Hex(rawToken));
      return owner && stillWorks(owner.validUntilMs) ? { employerId: owner.employerId, tokenId: owner.tokenId } : null;
    },
  };
}
