// Read model `smart_clients`: what client management lists and what the token endpoint checks. A
// revocation also sends NOTIFY smart_access_token_changed (payload: a token's hash) for every token of
// the client, from this transaction, so every process drops them from its cache once the revocation is
// committed and readable (src/smart-clients/access-tokens.ts).
import { sql } from 'slonik';
import { defineProjection } from '../../src/event-store/projection.ts';
import type { SmartClientEvent } from '../../src/smart-clients/events.ts';

export const SMART_ACCESS_TOKEN_CHANGED_CHANNEL = 'smart_access_token_changed';

const jsonOrNull = (value: unknown) => (value === null ? null : sql.jsonb(value as never));

export const smartClientsProjection = defineProjection<SmartClientEvent>({
  name: 'smart-clients',
  tables: ['smart_clients'],
  eventTypes: ['SmartClientRegistered', 'SmartClientKeysReplaced', 'SmartClientRevoked'],
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      switch (event.type) {
        case 'SmartClientRegistered': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO smart_clients (client_id, employer_id, name, jwks, jwks_url, scopes, registered_by, registered_at, keys_updated_at)
            VALUES (${d.clientId}, ${event.metadata.tenantId!}, ${d.name}, ${jsonOrNull(d.jwks)}, ${d.jwksUrl}, ${sql.array(d.scopes, 'text')},
                    ${d.registeredBy}, ${d.registeredAt}, ${d.registeredAt})`);
          break;
        }
        case 'SmartClientKeysReplaced':
          await tx.query(sql.unsafe`
            UPDATE smart_clients SET jwks = ${jsonOrNull(event.data.jwks)}, jwks_url = ${event.data.jwksUrl}, keys_updated_at = ${event.data.replacedAt}
            WHERE client_id = ${event.data.clientId}`);
          break;
        case 'SmartClientRevoked':
          await tx.query(sql.unsafe`UPDATE smart_clients SET revoked_at = ${event.data.revokedAt} WHERE client_id = ${event.data.clientId}`);
          await tx.query(sql.unsafe`SELECT pg_notify(${SMART_ACCESS_TOKEN_CHANGED_CHANNEL}, token_hash) FROM smart_access_tokens WHERE client_id = ${event.data.clientId}`);
          break;
      }
    }
  },
});
