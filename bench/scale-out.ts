// Scale-out on one Postgres with default settings (max_connections 100): 1, 2 and 4 API processes
// (`serve --role api`, separate OS processes) plus one worker/projections process, each with the same
// connection budget, chosen so that all five fit the server. Every API process gets, at once, a
// key-authenticated read (GET /api/employer/webhooks) and a command (webhook creation, read-your-writes
// included) from autocannon, while a probe writes on one process and reads the result on the next
// (cross-process read-your-writes delay). Prints per N: total req/s, p99, errors, peak connections
// (pg_stat_activity of the database: every process of the service) against the budget.
//   npm run bench -- scale-out [seconds per N=10] [read connections per process=16] [write connections per process=4]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { freePort, percentile, sessionCookieOf, startBenchDatabase, startServiceProcess, stopServiceProcess, type ServiceProcess } from './support.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const API_COUNTS = [1, 2, 4];
const PROCESSES_AT_MOST = Math.max(...API_COUNTS) + 1;
/** Connections kept free besides the service: this bench's monitor and an operator's psql. */
const HEADROOM = 2;

type ApiProcess = ServiceProcess & { url: string };
type Run = { seconds: number; latencies: number[]; ok: number; errors: number; peak: number; delays: number[] };

export default async function benchScaleOut(args: string[]) {
  const seconds = Number(args[0] ?? 10);
  const readConnections = Number(args[1] ?? 16);
  const writeConnections = Number(args[2] ?? 4);
  const database = await startBenchDatabase();
  const monitor = new pg.Client({ connectionString: database.connectionUri });
  await monitor.connect();
  const processes: ApiProcess[] = [];
  try {
    const setting = async (name: string) => Number((await monitor.query(`SELECT current_setting($1) AS value`, [name])).rows[0].value);
    const maxConnections = await setting('max_connections');
    const reserved = await setting('superuser_reserved_connections');
    // The README's sizing rule: processes x budget + reserved + headroom <= max_connections.
    const budget = Math.floor((maxConnections - reserved - HEADROOM) / PROCESSES_AT_MOST);
    const env = {
      DATABASE_URL: database.connectionUri,
      DATABASE_MAX_CONNECTIONS: String(budget),
      NODE_ENV: 'production',
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      API_KEY_RATE_LIMIT_PER_MIN: '1000000000',
      API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000000',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    };
    console.log(`Postgres max_connections ${maxConnections} (${reserved} reserved for superusers); budget ${budget} per process, ${PROCESSES_AT_MOST} processes at most = ${budget * PROCESSES_AT_MOST}`);

    const ports = await Promise.all(Array.from({ length: PROCESSES_AT_MOST - 1 }, () => freePort()));
    const apiUrl = (index: number) => `http://127.0.0.1:${ports[index]}`;
    const startApi = async (index: number) => processes.push({ ...(await startServiceProcess('api', { ...env, PORT: String(ports[index]), PUBLIC_BASE_URL: apiUrl(index) })), url: apiUrl(index) });

    // Two tenants (migrating the database first): one whose list is read, one that takes the writes,
    // so the list read stays the same size however many webhooks the commands create.
    const readerTenant = await cliJson(['tenants', 'create', '--name', 'Reader', '--admin-email', 'reader@bench.test', '--json'], { ...env, PUBLIC_BASE_URL: apiUrl(0) });
    const writerTenant = await cliJson(['tenants', 'create', '--name', 'Writer', '--admin-email', 'writer@bench.test', '--json'], { ...env, PUBLIC_BASE_URL: apiUrl(0) });
    processes.push({ ...(await startServiceProcess('worker,projections', env)), url: '' });
    await startApi(0);
    console.log(`worker/projections: ${processes[0]!.startupLine}\napi: ${processes[1]!.startupLine}`);
    const readKey = await apiKeyOf(apiUrl(0), String(readerTenant.signInUrl));
    const writeKey = await apiKeyOf(apiUrl(0), String(writerTenant.signInUrl));
    const webhookBody = JSON.stringify({ url: 'https://127.0.0.1:9/bench', events: ['test.ping'] });
    await call(apiUrl(0), 'POST', '/api/employer/webhooks', readKey, webhookBody);

    const results = new Map<number, Run>();
    for (const n of API_COUNTS) {
      while (processes.length - 1 < n) await startApi(processes.length - 1);
      const targets = processes.slice(1, n + 1).map((process) => process.url!);
      const load = (loadSeconds: number) => drive({ targets, readKey, writeKey, webhookBody, seconds: loadSeconds, readConnections, writeConnections, monitor });
      await load(2); // warm-up: connections opened, plans cached, JIT
      const run = await load(seconds);
      results.set(n, run);
      const sorted = [...run.latencies].sort((a, b) => a - b);
      const delays = [...run.delays].sort((a, b) => a - b);
      console.log(
        `N=${n} api processes: ${(run.ok / run.seconds).toFixed(0)} req/s, p99 ${percentile(sorted, 99).toFixed(1)} ms, errors ${run.errors}, ` +
          `peak connections ${run.peak} (budget ${(n + 1) * budget}), read-your-writes across processes p99 ${percentile(delays, 99).toFixed(1)} ms (${delays.length} probes${n === 1 ? ', same process' : ''})`,
      );
    }
    const rate = (n: number) => results.get(n)!.ok / results.get(n)!.seconds;
    const last = API_COUNTS[API_COUNTS.length - 1]!;
    const errors = [...results.values()].reduce((sum, run) => sum + run.errors, 0);
    const overBudget = API_COUNTS.filter((n) => results.get(n)!.peak > (n + 1) * budget);
    console.log(`throughput N=${last} / N=1: ${(rate(last) / rate(1)).toFixed(2)} (goal >= 0.8); errors ${errors} (goal 0); peak within budget: ${overBudget.length === 0 ? 'yes' : `no at N=${overBudget.join(', ')}`}`);
  } finally {
    await Promise.all(processes.map(stopServiceProcess));
    await monitor.end();
    await database.stop();
  }
}

/** Reads and commands on every target at once, a cross-process read-your-writes probe, and the connection count. */
async function drive(options: {
  targets: string[];
  readKey: string;
  writeKey: string;
  webhookBody: string;
  seconds: number;
  readConnections: number;
  writeConnections: number;
  monitor: pg.Client;
}): Promise<Run> {
  const run: Run = { seconds: options.seconds, latencies: [], ok: 0, errors: 0, peak: 0, delays: [] };
  const headers = (key: string) => ({ 'x-api-key': key, 'x-api-version': '2026-02-01', 'content-type': 'application/json' });
  // Without a callback autocannon returns its event emitter made thenable (its types say only one or the other).
  const load = (settings: autocannon.Options) => autocannon(settings) as unknown as autocannon.Instance & Promise<autocannon.Result>;
  const instances = options.targets.flatMap((url) => [
    load({ url, connections: options.readConnections, duration: options.seconds, requests: [{ method: 'GET', path: '/api/employer/webhooks', headers: headers(options.readKey) }] }),
    load({ url, connections: options.writeConnections, duration: options.seconds, requests: [{ method: 'POST', path: '/api/employer/webhooks', headers: headers(options.writeKey), body: options.webhookBody }] }),
  ]);
  for (const instance of instances) {
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      run.latencies.push(responseTime);
      if (statusCode >= 200 && statusCode < 300) run.ok++;
    });
  }
  let running = true;
  const sampler = (async () => {
    while (running) {
      const { rows } = await options.monitor.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
      run.peak = Math.max(run.peak, rows[0].n as number);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const prober = (async () => {
    for (let k = 0; running; k++) {
      const writeOn = options.targets[k % options.targets.length]!;
      const readOn = options.targets[(k + 1) % options.targets.length]!;
      const created = await call(writeOn, 'POST', '/api/employer/webhooks', options.writeKey, options.webhookBody).catch(() => null);
      if (!created || created.status !== 201) continue;
      const acknowledgedAt = performance.now();
      for (let attempt = 0; attempt < 1000; attempt++) {
        const read = await call(readOn, 'GET', `/api/employer/webhooks/${(created.body as { id: string }).id}`, options.writeKey);
        if (read.status === 200) {
          run.delays.push(performance.now() - acknowledgedAt);
          break;
        }
      }
    }
  })();
  const results = await Promise.all(instances);
  running = false;
  await Promise.all([sampler, prober]);
  for (const result of results) run.errors += result.errors + result.non2xx;
  return run;
}

async function call(url: string, method: string, path: string, key: string, body?: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${url}${path}`, { method, headers: { 'x-api-key': key, 'x-api-version': '2026-02-01', ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body } : {}) });
  return { status: response.status, body: await response.json() };
}

/** Signs in with a tenant admin's one-time link and creates an API key for webhooks. */
async function apiKeyOf(apiUrl: string, signInUrl: string): Promise<string> {
  const cookie = await sessionCookieOf(signInUrl);
  const response = await fetch(`${apiUrl}/api/employer/api-keys`, {
    method: 'POST',
    headers: { cookie, origin: apiUrl, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'scale-out bench', scopes: ['webhook:manage'] }),
  });
  const body = (await response.json()) as { rawKey?: string };
  if (response.status !== 201 || !body.rawKey) throw new Error(`creating an API key failed: ${response.status} ${JSON.stringify(body)}`);
  return body.rawKey;
}

async function cliJson(args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, ['src/cli.ts', ...args], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed (${code}): ${output}`);
  return JSON.parse(output.trim().split('\n').pop()!) as Record<string, unknown>;
}
