// Chooses the event store adapter from EVENT_STORE.
import type { Config } from '../config.ts';
import type { Notifications } from '../db/notifications.ts';
import type { Database } from '../db/pools.ts';
import type { EventStore } from './port.ts';
import type { Projection } from './projection.ts';
import type { EventRegistry } from './schemas.ts';
import { createPostgresEventStore } from './postgres.ts';

/** `projections`: those marked `inline` are applied in the appending transaction on Postgres (none on KurrentDB). */
export async function createEventStore(config: Config, db: Database, notifications: Notifications, registry: EventRegistry, projections: readonly Projection[] = []): Promise<EventStore> {
  if (config.EVENT_STORE === 'esdb') {
    const { createKurrentDbEventStore } = await import('./kurrentdb.ts');
    return createKurrentDbEventStore(config.EVENTSTORE_CONNECTION_STRING!, registry);
  }
  return createPostgresEventStore(db.eventStore, notifications, registry, { db: db.slonik, projections });
}
