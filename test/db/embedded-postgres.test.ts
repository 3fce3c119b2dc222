// The embedded Postgres as `npm start` runs it: a superuser password generated into DATA_DIR (0600), a
// data directory made with the former fixed password changed over at its next start, a CLI command
// sharing the server of a running service, and a service killed with SIGKILL whose orphaned Postgres
// the next start stops before starting its own. Run as root, the servers run as the `postgres` user.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import { freePort } from '../support/ports.ts';
import { waitUntil } from '../webhooks/helpers.ts';

const repoRoot = join(import.meta.dirname, '..', '..');
const hasProc = existsSync('/proc/self');
if (!hasProc) console.warn('embedded Postgres orphan test skipped: it reads processes from /proc (Linux)');

/** 'ok', or the error code of connecting as the superuser with `password` (28P01: refused password). */
async function connectAs(port: number, password: string): Promise<string> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  try {
    await client.connect();
    return 'ok';
  } catch (error) {
    return String((error as { code?: unknown }).code);
  } finally {
    await client.end().catch(() => {});
  }
}

const passwordOf = async (dataDir: string) => (await readFile(join(dataDir, 'postgres.password'), 'utf8')).trim();

/** Pid and parent of every live postgres server (postmaster) whose data directory is `databaseDir`. */
async function serversOf(databaseDir: string): Promise<Array<{ pid: number; parentPid: number }>> {
  const servers: Array<{ pid: number; parentPid: number }> = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [commandLine, status] = await Promise.all([readFile(`/proc/${entry}/cmdline`, 'utf8'), readFile(`/proc/${entry}/stat`, 'utf8')]).catch(() => ['', '']);
    const command = commandLine.split('\0');
    if (!/(^|\/)postgres$/.test(command[0]!) || command[command.indexOf('-D') + 1] !== databaseDir) continue;
    servers.push({ pid: Number(entry), parentPid: Number(status.slice(status.lastIndexOf(')') + 2).split(' ')[1]) });
  }
  return servers;
}

describe('the embedded Postgres', () => {
  it('makes a data directory with a random superuser password kept in DATA_DIR (0600), and shares a running server with a second start', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ei-embedded-pg-'));
    const port = await freePort();
    const owner = await startEmbeddedPostgres({ dataDir, port, databaseName: 'first' });
    try {
      const password = await passwordOf(dataDir);
      expect(password).toMatch(/^[\w-]{32}$/); // 24 random bytes
      expect((await stat(join(dataDir, 'postgres.password'))).mode & 0o777).toBe(0o600);
      expect(new URL(owner.connectionUri).password).toBe(password);
      expect(await connectAs(port, password)).toBe('ok');
      expect(await connectAs(port, 'postgres')).toBe('28P01');

      // A second start of the same DATA_DIR (a CLI command beside the service) uses the running server and leaves it running.
      const shared = await startEmbeddedPostgres({ dataDir, port: await freePort(), databaseName: 'second' });
      expect(new URL(shared.connectionUri).port).toBe(String(port));
      await shared.stop();
      expect(await connectAs(port, password)).toBe('ok');
    } finally {
      await owner.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('gives a data directory made with the former fixed password `postgres` the generated one at its next start', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ei-embedded-pg-'));
    const port = await freePort();
    try {
      // A data directory as the previous version left it: superuser password `postgres`, no password file.
      const before = await startEmbeddedPostgres({ dataDir, port, databaseName: 'legacy' });
      const admin = new pg.Client({ connectionString: before.connectionUri });
      await admin.connect();
      await admin.query("ALTER ROLE postgres PASSWORD 'postgres'");
      await admin.end();
      await before.stop();
      await rm(join(dataDir, 'postgres.password'));

      const after = await startEmbeddedPostgres({ dataDir, port, databaseName: 'legacy' });
      try {
        const password = await passwordOf(dataDir);
        expect((await stat(join(dataDir, 'postgres.password'))).mode & 0o777).toBe(0o600);
        expect(new URL(after.connectionUri).password).toBe(password);
        expect(await connectAs(port, password)).toBe('ok');
        expect(await connectAs(port, 'postgres')).toBe('28P01');
      } finally {
        await after.stop();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it.skipIf(!hasProc)('stops the Postgres a killed (SIGKILL) service left running before starting its own, and a clean stop then leaves none', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'ei-embedded-pg-'));
    const databaseDir = join(dataDir, 'postgres');
    const [httpPort, postgresPort] = [await freePort(), await freePort()];
    const { DATABASE_URL: _shared, ...environment } = process.env;
    const env = {
      ...environment, DATA_DIR: dataDir, PORT: String(httpPort), HOST: '127.0.0.1', PUBLIC_BASE_URL: `http://127.0.0.1:${httpPort}`,
      EMBEDDED_POSTGRES_PORT: String(postgresPort), LOG_LEVEL: 'warn',
    };
    const output: string[] = [];
    /** `npm start`'s service process itself (no launcher in between), healthy. */
    const startService = async (): Promise<ChildProcess> => {
      const service = spawn(process.execPath, ['src/cli.ts', 'serve', '--role', 'api'], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
      for (const stream of [service.stdout!, service.stderr!]) stream.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
      await waitUntil('the service to answer /healthz', async () => {
        if (service.exitCode !== null) throw new Error(`the service exited (${service.exitCode}): ${output.join('')}`);
        return fetch(`http://127.0.0.1:${httpPort}/healthz`).then((response) => response.ok, () => false);
      }, 120_000);
      return service;
    };

    let second: ChildProcess | undefined;
    try {
      const first = await startService();
      const [orphan] = await serversOf(databaseDir);
      expect(orphan).toEqual({ pid: expect.any(Number), parentPid: first.pid });

      first.kill('SIGKILL');
      await once(first, 'exit');
      // The issue as reported: the service is gone, its Postgres is not.
      expect((await serversOf(databaseDir)).map((server) => server.pid)).toEqual([orphan!.pid]);

      second = await startService();
      const servers = await serversOf(databaseDir);
      expect(servers).toEqual([{ pid: expect.any(Number), parentPid: second.pid }]);
      expect(servers[0]!.pid).not.toBe(orphan!.pid);
      expect(output.join('')).toContain('stopping an orphaned embedded Postgres');
      expect(await connectAs(postgresPort, await passwordOf(dataDir))).toBe('ok');

      second.kill('SIGTERM');
      const [code] = (await once(second, 'exit')) as [number | null];
      expect(code).toBe(0);
      expect(await serversOf(databaseDir)).toEqual([]);
      expect(existsSync(join(dataDir, 'postgres.owner'))).toBe(false);
    } finally {
      if (second?.exitCode === null) second.kill('SIGKILL');
      for (const { pid } of await serversOf(databaseDir)) process.kill(pid, 'SIGINT'); // nothing left behind by a failed run
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
