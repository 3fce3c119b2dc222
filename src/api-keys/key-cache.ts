// The per-process cache of API keys by the SHA-256 of the raw key, so a request does not read the
// database. Every change to a key (projections/api-keys/projection.ts) sends NOTIFY api_key_changed with the
// key's hash from the transaction that updates the read model; each process drops that entry and
// reloads it on the next request (src/db/notified-cache.ts), so a revocation reaches every process
// within the notification's delivery time. The process that ran the command drops the entry itself
// at once. Unknown hashes are cached too (bounded), so a flood of wrong keys stays in memory.
//
// Apart from the cache, the process knows the hash of every key that exists, in any state: read at
// start-up (and again after a lost LISTEN connection), then added to by the same notification, which
// the projection also sends when a key is created, and by every lookup that finds a key. So the
// pipeline tells a real key from a guess without reading the database (about 100 bytes per key).
import type { DatabasePool } from 'slonik';
import { API_KEY_CHANGED_CHANNEL } from '../../projections/api-keys/projection.ts';
import { allKeyHashes, findKeyByHash } from '../../projections/api-keys/queries.ts';
import type { Scope } from '../auth/principal.ts';
import { createNotifiedCache } from '../db/notified-cache.ts';
import type { Notifications } from '../db/notifications.ts';
import { hashesEqual } from '../crypto/tokens.ts';
import { parseCidrs, type Cidr } from './cidr.ts';
import type { Clock } from './rate-limiter.ts';

const ENTRY_TTL_MS = 60_000;
const MAX_ENTRIES = 50_000;

export type CachedKey = {
  id: string;
  employerId: string;
  keyHash: string;
  scopes: readonly Scope[];
  allowlist: readonly Cidr[];
  expiresAtMs: number | null;
  suspended: boolean;
  revoked: boolean;
  /** A rolled key is revoked from this instant on (the end of its overlap). */
  revokesAtMs: number | null;
  /** False once the user who created the key is deactivated: the key is refused as revoked. */
  creatorActive: boolean;
  createdBy: string;
  rateLimitPerMinute: number | null;
};

export type KeyCache = {
  /** The key whose hash is `keyHash`, or null when there is none. */
  find(keyHash: string): Promise<CachedKey | null>;
  /** Whether `keyHash` is the hash of a key that exists (revoked, expired or suspended included); no database access. */
  exists(keyHash: string): boolean;
  invalidate(keyHash: string): void;
  stop(): void;
};

export async function createKeyCache(deps: { pool: DatabasePool; notifications: Notifications; clock: Clock }): Promise<KeyCache> {
  const existing = new Set<string>();
  const readExisting = async () => {
    for (const hash of await allKeyHashes(deps.pool)) existing.add(hash);
  };
  await readExisting();
  const stopListening = await deps.notifications.listen(API_KEY_CHANGED_CHANNEL, (keyHash) => {
    // An empty payload: the LISTEN connection was lost, and with it perhaps the news of new keys.
    if (keyHash === '') void readExisting().catch(() => {});
    else existing.add(keyHash);
  });
  const cache = await createNotifiedCache<CachedKey | null>({
    notifications: deps.notifications,
    channel: API_KEY_CHANGED_CHANNEL,
    ttlMs: ENTRY_TTL_MS,
    maxEntries: MAX_ENTRIES,
    clock: deps.clock,
    load: async (keyHash) => {
      const row = await findKeyByHash(deps.pool, keyHash);
      // The index lookup found the row by hash; the comparison that accepts it is constant-time.
      if (!row || !hashesEqual(row.key_hash, keyHash)) return null;
      existing.add(row.key_hash);
      return {
        id: row.id,
        employerId: row.employer_id,
        keyHash: row.key_hash,
        scopes: row.scopes as Scope[],
        allowlist: parseCidrs(row.allowed_ip_cidrs),
        expiresAtMs: row.expires_at === null ? null : Date.parse(row.expires_at),
        suspended: row.suspended,
        revoked: row.revoked_at !== null,
        revokesAtMs: row.roll_revokes_at === null ? null : Date.parse(row.roll_revokes_at),
        creatorActive: row.creator_active,
        createdBy: row.created_by,
        rateLimitPerMinute: row.rate_limit_per_minute,
      };
    },
  });
  return {
    find: cache.get,
    exists: (keyHash) => existing.has(keyHash),
    invalidate: cache.invalidate,
    stop() {
      stopListening();
      cache.stop();
    },
  };
}
