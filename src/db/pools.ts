// Clients of one database: slonik (typed SQL in tagged templates) for read models and queries; a
// second slonik pool for the event store, whose reads and appends are independent of any read-model
// transaction (a rebuild reads events while holding its swap transaction open, which slonik would
// otherwise refuse as a "foreign connection"); and a plain pg pool for graphile-worker.
import pg from 'pg';
import { createPool, createTypeParserPreset, type DatabasePool } from 'slonik';

export type Database = { slonik: DatabasePool; eventStore: DatabasePool; pg: pg.Pool; connectionUri: string };

/** A stuck writer holding a transaction open would stall every event reader (they read below xmin). */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

export async function openDatabase(connectionUri: string, options: { maximumPoolSize?: number } = {}): Promise<Database> {
  const settings = {
    captureStackTrace: false,
    idleInTransactionSessionTimeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    typeParsers: [
      ...createTypeParserPreset().filter((parser) => parser.name !== 'timestamptz'),
      // Timestamps leave the database as ISO 8601 strings, the form every API response uses.
      { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
    ],
  };
  const slonik = await createPool(connectionUri, { ...settings, maximumPoolSize: options.maximumPoolSize ?? 20 });
  const eventStore = await createPool(connectionUri, { ...settings, maximumPoolSize: 20, dangerouslyAllowForeignConnections: true });
  const pgPool = new pg.Pool({ connectionString: connectionUri, max: 10 });
  // Idle clients dropped by the server are replaced on next use; graphile-worker asks for both handlers.
  pgPool.on('error', () => {});
  pgPool.on('connect', (client) => client.on('error', () => {}));
  return { slonik, eventStore, pg: pgPool, connectionUri };
}

export async function closeDatabase(db: Database): Promise<void> {
  await Promise.allSettled([db.slonik.end(), db.eventStore.end(), db.pg.end()]);
}
