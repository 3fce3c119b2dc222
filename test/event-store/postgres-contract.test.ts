// The event store contract against the Postgres adapter, on this test file's own migrated database.
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { createTestDatabase } from '../support/database.ts';
import { eventStoreContract } from './contract.ts';

eventStoreContract('Postgres', async () => {
  const database = await createTestDatabase();
  const store = createPostgresEventStore(database.db.eventStore, database.notifications);
  return {
    store,
    async cleanup() {
      await store.close();
      await database.cleanup();
    },
  };
});
