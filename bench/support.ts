// What every benchmark needs: a real Postgres of its own (embedded in a temp directory, or
// DATABASE_URL's server with a fresh database), the service started on it, and percentile maths.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, parentPort } from 'node:worker_threads';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.ts';
import type { Capability } from '../src/capability.ts';
import { startService, type Role, type Service } from '../src/main.ts';
import { startHttpsReceiver, type ReceivedRequest } from '../test/support/https-receiver.ts';
import { freePort } from '../test/support/ports.ts';

export { freePort };
export { startServiceProcess, stopServiceProcess, type ServiceProcess } from '../test/support/service-process.ts';
/** Signs in through a one-time link as a browser does (confirmation page, then its form): the session cookie. */
export { sessionCookieOf } from '../test/support/sign-in.ts';

export type BenchDatabase = { connectionUri: string; stop(): Promise<void> };

export async function startBenchDatabase(): Promise<BenchDatabase> {
  const name = `bench_${Date.now()}`;
  if (process.env.DATABASE_URL) {
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(process.env.DATABASE_URL);
    url.pathname = `/${name}`;
    return { connectionUri: url.toString(), stop: async () => {} };
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'ei-bench-pg-'));
  const embedded = await startEmbeddedPostgres({ dataDir, port: await freePort(), databaseName: name, persistent: false });
  return {
    connectionUri: embedded.connectionUri,
    stop: async () => {
      await embedded.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startBenchService(
  options: { env?: Record<string, string>; roles?: Role[]; capabilities?: Capability[] } = {},
): Promise<Service & { url: string; stopAll(): Promise<void> }> {
  const database = await startBenchDatabase();
  const port = await freePort();
  const config = loadConfig({
    NODE_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: database.connectionUri,
    DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-bench-data-')),
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    LOG_LEVEL: 'silent',
    // Benches measure throughput: their callers' rate limits are lifted unless a bench sets them.
    API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000000',
    SESSION_RATE_LIMIT_PER_MIN: '1000000000',
    ...options.env,
  });
  const service = await startService({
    config,
    ...(options.roles ? { roles: options.roles } : {}),
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
  });
  return {
    ...service,
    url: config.PUBLIC_BASE_URL,
    stopAll: async () => {
      await service.stop();
      await database.stop();
    },
  };
}


export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return Number.NaN;
  return sortedMs[Math.min(sortedMs.length - 1, Math.floor((p / 100) * sortedMs.length))]!;
}

/** Runs `task` from `concurrency` loops until `durationMs` has passed; returns completed count and latencies. */
export async function runConcurrently(concurrency: number, durationMs: number, task: (worker: number, i: number) => Promise<void>) {
  const latencies: number[] = [];
  const deadline = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const t0 = performance.now();
        await task(worker, i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, perSecond: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/**
 * The physical reference for work that writes one transaction per item: `count` single-row INSERT
 * transactions into a fresh, simple table (identity key and a jsonb column), from `concurrency` loops
 * on plain pg. Returns transactions per second.
 */
export async function plainInsertTransactions(pool: pg.Pool, count: number, concurrency: number): Promise<number> {
  await pool.query('CREATE TABLE IF NOT EXISTS bench_reference_inserts (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, data jsonb NOT NULL)');
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      const i = next++;
      await pool.query('INSERT INTO bench_reference_inserts (data) VALUES ($1)', [JSON.stringify({ i, name: 'Acme' })]);
    }
  }));
  return count / ((performance.now() - started) / 1000);
}

/** USER_HZ, the unit of /proc's CPU times, fixed by the Linux ABI. */
const TICKS_PER_SECOND = 100;

/** /proc/<pid>/stat's fields after the parenthesised command name, from field 3 (state) on (Linux). */
const statOf = async (pid: string | number) => (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ').pop()!.split(' ');

/** CPU seconds (user + system) process `pid` has used so far, from /proc (Linux). */
export async function cpuSecondsOf(pid: number): Promise<number> {
  const fields = await statOf(pid);
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/**
 * A clock of the CPU seconds used so far by this process and by the Postgres server behind `pool`
 * (postmaster, its children alive, and those that exited, which the postmaster's own figures
 * include): CPU per operation hardly moves when other work shares the machine, throughput does.
 * `postgres` is null when the server is not a process of this machine (read from /proc, Linux).
 */
export async function startCpuClock(pool: pg.Pool): Promise<() => Promise<{ process: number; postgres: number | null }>> {
  const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  // A backend of a server elsewhere may share its pid with an unrelated process here.
  const isPostgres = async (pid: string | number) => (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim() === 'postgres';
  const backend = rows[0]!.pid;
  const parent = (await isPostgres(backend)) ? (await statOf(backend))[1]! : null;
  const postmaster = parent && (await isPostgres(parent)) ? parent : null;
  const postgresSeconds = async (): Promise<number | null> => {
    if (!postmaster) return null;
    const own = await statOf(postmaster).catch(() => null);
    if (!own) return null;
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const fields = await statOf(entry).catch(() => null);
      if (fields?.[1] === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks / TICKS_PER_SECOND;
  };
  return async () => {
    const usage = process.cpuUsage();
    return { process: (usage.user + usage.system) / 1e6, postgres: await postgresSeconds() };
  };
}


/** A process's resident set size in MB, from /proc (Linux). */
export async function residentMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) / 1024;
}

/** The peak RSS of process `pid` while `step` runs, sampled every 10 ms. */
export async function measured<T>(pid: number, step: () => Promise<T>): Promise<{ result: T; ms: number; peakRssMb: number }> {
  let peak = await residentMb(pid);
  const sampler = setInterval(() => void residentMb(pid).then((mb) => (peak = Math.max(peak, mb)), () => {}), 10);
  const started = performance.now();
  try {
    const result = await step();
    return { result, ms: performance.now() - started, peakRssMb: Math.max(peak, await residentMb(pid)) };
  } finally {
    clearInterval(sampler);
  }
}

/** Reads a response body to its end, counting bytes (memory stays flat on this side too). */
export async function drain(response: Response): Promise<number> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  let bytes = 0;
  for await (const chunk of response.body!) bytes += (chunk as Uint8Array).byteLength;
  return bytes;
}

/**
 * The thread side of a bench's HTTPS receiver (127.0.0.1, self-signed), run in a worker thread so it
 * shares no event loop with the service: answers 200 to everything, keeps what `record` takes from each
 * request (and drops the request's body: memory stays flat over long runs), and answers the main
 * thread's `report` with the receipts so far and `close` by closing.
 */
export async function serveReceipts<Receipt>(record: (request: ReceivedRequest) => Receipt[]): Promise<void> {
  const receipts: Receipt[] = [];
  const receiver = await startHttpsReceiver();
  receiver.respondWith((request) => {
    receipts.push(...record(request));
    request.rawBody = Buffer.alloc(0);
    request.body = '';
    return { status: 200 };
  });
  parentPort!.on('message', async (message: 'report' | 'close') => {
    if (message === 'report') parentPort!.postMessage({ receipts });
    else await receiver.close().then(() => process.exit(0));
  });
  parentPort!.postMessage({ url: receiver.url, ca: receiver.ca });
}

/** The main side: starts `moduleUrl` (whose thread calls serveReceipts) in a worker thread. */
export async function startReceiverThread<Receipt>(moduleUrl: string | URL) {
  const thread = new Worker(new URL(moduleUrl));
  const { url, ca } = await new Promise<{ url: string; ca: string }>((resolve) => thread.once('message', resolve));
  return {
    url,
    ca,
    receipts: () =>
      new Promise<Receipt[]>((resolve) => {
        thread.once('message', (message: { receipts: Receipt[] }) => resolve(message.receipts));
        thread.postMessage('report');
      }),
    close: () => thread.postMessage('close'),
  };
}

/**
 * The settings of a service process a bench runs on `database`: production, on 127.0.0.1 at a free
 * port, its data in a temporary directory named after the bench, with `extra` on top.
 */
export async function serviceProcessSettings(database: BenchDatabase, bench: string, extra: Record<string, string> = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), `ei-bench-${bench}-`));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(port), PUBLIC_BASE_URL: url, DATABASE_URL: database.connectionUri, DATA_DIR: dataDir,
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), LOG_LEVEL: 'warn', ...extra,
  };
  return { env, url, dataDir };
}
