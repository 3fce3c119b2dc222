// Read model `api_keys`: what key management lists and what the request pipeline's cache loads. Each
// change also sends NOTIFY api_key_changed (payload: the key's hash) from this transaction, so every
// process drops its cached copy when, and only when, the new state is committed and readable.
import { sql, type DatabaseTransactionConnection } from 'slonik';
import type { ApiKeyEvent } from '../../src/api-keys/events.ts';
import type { UserDeactivated, UserReactivated } from '../../src/tenants/events.ts';
import { defineProjection } from '../../src/event-store/projection.ts';

/** Payload: the changed key's hash. The per-process key cache (src/api-keys/key-cache.ts) listens to it. */
export const API_KEY_CHANGED_CHANNEL = 'api_key_changed';

export const apiKeysProjection = defineProjection<ApiKeyEvent | UserDeactivated | UserReactivated>({
  name: 'api-keys',
  tables: ['api_keys'],
  // The creator's deactivation and reactivation too: the pipeline refuses the keys of an inactive creator.
  eventTypes: [
    'ApiKeyCreated', 'ApiKeyRenamed', 'ApiKeySuspended', 'ApiKeyResumed', 'ApiKeyRevoked', 'ApiKeySettingsChanged', 'ApiKeyRolled',
    'UserDeactivated', 'UserReactivated',
  ],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      switch (event.type) {
        case 'ApiKeyCreated': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO api_keys (id, employer_id, name, key_hash, key_prefix, scopes, allowed_ip_cidrs, expires_at, rate_limit_per_minute, created_by, created_at)
            VALUES (${d.keyId}, ${event.metadata.tenantId!}, ${d.name}, ${d.keyHash}, ${d.keyPrefix}, ${sql.array(d.scopes, 'text')},
                    ${sql.array(d.allowedIpCidrs, 'text')}, ${d.expiresAt}, ${d.rateLimitPerMinute}, ${d.createdBy}, ${d.createdAt})`);
          await notifyChanged(tx, d.keyId);
          break;
        }
        case 'ApiKeyRenamed':
          await tx.query(sql.unsafe`UPDATE api_keys SET name = ${event.data.name} WHERE id = ${event.data.keyId}`);
          break;
        case 'ApiKeySuspended':
        case 'ApiKeyResumed':
          await tx.query(sql.unsafe`UPDATE api_keys SET suspended = ${event.type === 'ApiKeySuspended'} WHERE id = ${event.data.keyId}`);
          await notifyChanged(tx, event.data.keyId);
          break;
        case 'ApiKeyRevoked':
          await tx.query(sql.unsafe`
            UPDATE api_keys SET revoked_at = ${event.data.revokedAt}, revoke_reason = ${event.data.reason} WHERE id = ${event.data.keyId}`);
          await notifyChanged(tx, event.data.keyId);
          break;
        case 'ApiKeySettingsChanged': {
          const c = event.data.changes;
          const assignments = [
            c.scopes === undefined ? null : sql.fragment`scopes = ${sql.array(c.scopes, 'text')}`,
            c.allowedIpCidrs === undefined ? null : sql.fragment`allowed_ip_cidrs = ${sql.array(c.allowedIpCidrs, 'text')}`,
            c.expiresAt === undefined ? null : sql.fragment`expires_at = ${c.expiresAt}`,
            c.rateLimitPerMinute === undefined ? null : sql.fragment`rate_limit_per_minute = ${c.rateLimitPerMinute}`,
          ].filter((fragment) => fragment !== null);
          if (assignments.length > 0) await tx.query(sql.unsafe`UPDATE api_keys SET ${sql.join(assignments, sql.fragment`, `)} WHERE id = ${event.data.keyId}`);
          await notifyChanged(tx, event.data.keyId);
          break;
        }
        case 'ApiKeyRolled':
          await tx.query(sql.unsafe`
            UPDATE api_keys SET rolled_into = ${event.data.successorKeyId}, roll_revokes_at = ${event.data.revokesAt} WHERE id = ${event.data.keyId}`);
          await notifyChanged(tx, event.data.keyId);
          break;
        case 'UserDeactivated':
        case 'UserReactivated':
          await tx.query(sql.unsafe`
            WITH changed AS (
              UPDATE api_keys SET creator_active = ${event.type === 'UserReactivated'}
              WHERE employer_id = ${event.metadata.tenantId!} AND created_by = ${event.data.userId} AND revoked_at IS NULL
              RETURNING key_hash)
            SELECT pg_notify(${API_KEY_CHANGED_CHANNEL}, key_hash) FROM changed`);
          break;
      }
    }
  },
});

async function notifyChanged(tx: DatabaseTransactionConnection, keyId: string) {
  await tx.query(sql.unsafe`SELECT pg_notify(${API_KEY_CHANGED_CHANNEL}, key_hash) FROM api_keys WHERE id = ${keyId}`);
}
