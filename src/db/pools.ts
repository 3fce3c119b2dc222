// Clients of one database: slonik (typed SQL in tagged templates) for read models and queries; a pg
// pool for the event store (its hot path, and independent of read-model transactions: a rebuild reads
// events while it holds its swap transaction open); and a pg pool for graphile-worker.
import pg from 'pg';
import { createPool, createTypeParserPreset, type DatabasePool } from 'slonik';

export type Database = { slonik: DatabasePool; eventStore: pg.Pool; pg: pg.Pool; connectionUri: string };

/** A stuck writer holding a transaction open would stall every event reader (they read below xmin). */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

export async function openDatabase(connectionUri: string, options: { maximumPoolSize?: number } = {}): Promise<Database> {
  const settings = {
    captureStackTrace: false,
    // slonik's default runs DISCARD ALL after every pooled query (a second round trip each, and no
    // cached plans). Nothing here leaves session state behind: settings are transaction-local.
    resetConnection: async () => {},
    idleInTransactionSessionTimeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    typeParsers: [
      ...createTypeParserPreset().filter((parser) => parser.name !== 'timestamptz'),
      // Timestamps leave the database as ISO 8601 strings, the form every API response uses.
      { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
    ],
  };
  const slonik = await createPool(connectionUri, { ...settings, maximumPoolSize: options.maximumPoolSize ?? 20 });
  // The event store's statements are few, named and prepared once per connection, and their best plan
  // does not depend on the values. Left to choose (Postgres's default), it re-planned the append to
  // several streams for every call, which then spent more time planning than running (measured:
  // 0.65 ms a call against 0.35 ms with the generic plan).
  const eventStore = newPgPool(connectionUri, 20, { options: '-c plan_cache_mode=force_generic_plan' });
  const pgPool = newPgPool(connectionUri, 10);
  return { slonik, eventStore, pg: pgPool, connectionUri };
}

export async function closeDatabase(db: Database): Promise<void> {
  await Promise.allSettled([db.slonik.end(), db.eventStore.end(), db.pg.end()]);
}

function newPgPool(connectionUri: string, max: number, settings: { options?: string } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: connectionUri,
    max,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    ...settings,
  });
  // Idle clients dropped by the server are replaced on next use; graphile-worker asks for both handlers.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
