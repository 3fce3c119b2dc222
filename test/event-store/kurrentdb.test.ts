// The event store contract against the KurrentDB adapter, on a real KurrentDB in a container. Where no
// container runtime (Docker) is available the suite is skipped, and the reason printed.
import { KurrentDbContainer } from '@testcontainers/kurrentdb';
import { getContainerRuntimeClient } from 'testcontainers';
import { describe } from 'vitest';
import { createKurrentDbEventStore } from '../../src/event-store/kurrentdb.ts';
import type { EventStore } from '../../src/event-store/port.ts';
import { eventStoreContract } from './contract.ts';

const KURRENTDB_IMAGE = 'docker.kurrent.io/kurrent-latest/kurrentdb:latest';

const noContainerRuntime = await getContainerRuntimeClient().then(
  () => null,
  (error: unknown) => (error instanceof Error ? error.message : String(error)),
);
if (noContainerRuntime) {
  console.warn(`Skipping the KurrentDB event store contract: no container runtime here (${noContainerRuntime}).`);
}

describe.skipIf(noContainerRuntime)('KurrentDB', () => {
  eventStoreContract('KurrentDB', async () => {
    const container = await new KurrentDbContainer(KURRENTDB_IMAGE).start();
    const stores: EventStore[] = [];
    return {
      store(registry) {
        const store = createKurrentDbEventStore(container.getConnectionString(), registry);
        stores.push(store);
        return store;
      },
      async cleanup() {
        for (const store of stores) await store.close();
        await container.stop();
      },
    };
  });
});
