// Two clients to one database: slonik (typed SQL in tagged templates) for the service's own queries,
// and a plain pg pool for graphile-worker, which takes one.
import pg from 'pg';
import { createPool, createTypeParserPreset, type DatabasePool } from 'slonik';

export type Database = { slonik: DatabasePool; pg: pg.Pool; connectionUri: string };

/** A stuck writer holding a transaction open would stall every event reader (they read below xmin). */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

export async function openDatabase(connectionUri: string, options: { maximumPoolSize?: number } = {}): Promise<Database> {
  const slonik = await createPool(connectionUri, {
    maximumPoolSize: options.maximumPoolSize ?? 20,
    captureStackTrace: false,
    idleInTransactionSessionTimeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    typeParsers: [
      ...createTypeParserPreset().filter((parser) => parser.name !== 'timestamptz'),
      // Timestamps leave the database as ISO 8601 strings, the form every API response uses.
      { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
    ],
  });
  const pgPool = new pg.Pool({ connectionString: connectionUri, max: 10 });
  // Idle clients dropped by the server are replaced on next use; graphile-worker asks for both handlers.
  pgPool.on('error', () => {});
  pgPool.on('connect', (client) => client.on('error', () => {}));
  return { slonik, pg: pgPool, connectionUri };
}

export async function closeDatabase(db: Database): Promise<void> {
  await Promise.allSettled([db.slonik.end(), db.pg.end()]);
}
