// The event store contract against the Postgres adapter, on this test file's own migrated database.
import type { EventStore } from '../../src/event-store/port.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { createTestDatabase } from '../support/database.ts';
import { eventStoreContract } from './contract.ts';

eventStoreContract('Postgres', async () => {
  const database = await createTestDatabase();
  const stores: EventStore[] = [];
  return {
    store(registry) {
      const store = createPostgresEventStore(database.db.eventStore, database.notifications, registry);
      stores.push(store);
      return store;
    },
    async cleanup() {
      for (const store of stores) await store.close();
      await database.cleanup();
    },
  };
});
