// What the service's own work costs on a read: the key-authenticated `GET /api/employer/webhooks`
// against the least a server can do for the same answer: bare fastify, a pg pool of 20 and one
// prepared SELECT of the same subscription rows by the employer's index, behind a constant-time
// comparison of the x-api-key header. Both run as processes of their own on one embedded Postgres;
// autocannon, in this process, drives each for `seconds` at 32 connections, alternating (service,
// reference, reference, service), and the ratio service/reference of the mean req/s is what to read:
// this host's speed varies 2x between runs.
// Beside the rates, each process's CPU time per request (from /proc), which this host's other load
// disturbs less. With `--profile`, the service runs under `node --cpu-prof` and its top self-time
// functions are printed afterwards; the profiler slows the service, so take the ratio from a run
// without it.
//   npm run bench -- read [seconds per run=10] [subscriptions=5] [--profile]
import { spawn, type ChildProcess } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pg from 'pg';
import { WEBHOOK_EVENT_TYPES } from '../src/webhooks/event-types.ts';
import { SERVICE_NODE_FLAGS } from '../scripts/service-node-flags.mjs';
import { LIST_PAGE } from '../src/http/page.ts';
import { cpuSecondsOf, freePort, startBenchDatabase } from './support.ts';

const CONNECTIONS = 32;
const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const API_VERSION = '2026-02-01';

// The reference server, when this file runs as its own process (spawned below).
if (process.env.READ_BENCH_REFERENCE === '1') await serveReference();

/** Bare fastify + a pg pool of 20 + one prepared, indexed SELECT; the key compared in constant time; nothing else. */
async function serveReference() {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
  const employerId = process.env.EMPLOYER_ID!;
  const expectedKey = Buffer.from(process.env.API_KEY!);
  const list = {
    name: 'reference.list',
    text: `SELECT id, url, events, description, status, disabled_reason, failure_count, max_failures, created_at, updated_at
           FROM webhook_subscriptions WHERE employer_id = $1 ORDER BY created_at, id LIMIT $2`,
    values: [employerId, LIST_PAGE.default + 1],
  };
  const fastify = Fastify();
  fastify.get('/api/employer/webhooks', async (request, reply) => {
    const presented = Buffer.from(String(request.headers['x-api-key'] ?? ''));
    if (presented.length !== expectedKey.length || !timingSafeEqual(presented, expectedKey)) return reply.status(401).send({ error: 'unauthenticated' });
    const { rows } = await pool.query(list);
    return { webhooks: rows, availableEvents: WEBHOOK_EVENT_TYPES };
  });
  await fastify.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
  process.on('SIGTERM', () => void fastify.close().then(() => pool.end()).then(() => process.exit(0)));
}

type Run = { rps: number; p50: number; p99: number; non2xx: number; errors: number; cpuMicrosPerRequest: number };

/** CPU time (user + system) the process has used so far, in microseconds (Linux /proc; NaN elsewhere). */
const cpuMicros = async (pid: number) => (await cpuSecondsOf(pid).catch(() => Number.NaN)) * 1e6;

async function drive(url: string, pid: number, headers: Record<string, string>, seconds: number): Promise<Run> {
  const cpuBefore = await cpuMicros(pid);
  const result = await autocannon({ url: `${url}/api/employer/webhooks`, connections: CONNECTIONS, duration: seconds, headers });
  const cpu = (await cpuMicros(pid)) - cpuBefore;
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpuMicrosPerRequest: cpu / result.requests.total,
  };
}

function startProcess(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') console.error(`${args.join(' ')} exited with ${code ?? signal}`);
  });
  return child;
}

async function waitUntilServing(url: string, child: ChildProcess) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/api/employer/webhooks`, { method: 'HEAD' })).status < 500) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not start within 60 s`);
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** Self time per function (name, file, line) of a V8 .cpuprofile, largest first. */
function topSelfTime(profile: { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] }, count: number) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const frame = nodes.get(id)!;
    if (frame.functionName === '(idle)') return; // shares of the time the process was busy
    const where = frame.url ? `${frame.url.replace(`file://${projectRoot}/`, '')}:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'} ${where}`;
    const delta = profile.timeDeltas[i] ?? 0;
    self.set(name, (self.get(name) ?? 0) + delta);
    total += delta;
  });
  return [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, count).map(([name, micros]) => ({ name, share: micros / total }));
}

export default async function readBench(args: string[]) {
  const profile = args.includes('--profile');
  const [seconds = 10, subscriptions = 5] = args.filter((arg) => !arg.startsWith('--')).map(Number);
  const database = await startBenchDatabase();
  const profileDir = await mkdtemp(join(tmpdir(), 'ei-bench-read-prof-'));
  const dataDir = await mkdtemp(join(tmpdir(), 'ei-bench-read-'));
  const children: ChildProcess[] = [];
  try {
    // The tenant, its key and subscriptions, written through the commands by a short-lived service.
    const { loadConfig } = await import('../src/config.ts');
    const { startService } = await import('../src/main.ts');
    const { createEmployer } = await import('../src/tenants/commands.ts');
    const { createApiKey } = await import('../src/api-keys/commands.ts');
    const { createWebhook } = await import('../src/webhooks/commands.ts');
    const env = {
      NODE_ENV: 'production', HOST: '127.0.0.1', DATABASE_URL: database.connectionUri, DATA_DIR: dataDir,
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000000', // the key's own limit (100,000,000) must not be capped
    };
    const setup = await startService({ config: loadConfig({ ...env, PORT: '0', LOG_LEVEL: 'warn' }), roles: ['projections'] });
    const actor = { type: 'system', id: 'bench' } as const;
    const context = (tenantId: string) => ({ tenantId, actor });
    const { employerId, adminUserId } = await createEmployer(setup.ctx, { tenantId: null, actor }, { name: 'Bench', adminEmail: 'bench@example.test' });
    // A limit the bench cannot reach, so every request passes the whole pipeline (the limiter still leases permits).
    const { rawKey } = await createApiKey(setup.ctx, context(employerId), {
      name: 'bench', scopes: ['webhook:manage'], allowedIpCidrs: ['127.0.0.0/8', '::1/128'], expiresAt: null, rateLimitPerMinute: 100_000_000, createdBy: adminUserId, now: Date.now(),
    });
    for (let i = 0; i < subscriptions; i++) {
      await createWebhook(setup.ctx, context(employerId), { url: `https://127.0.0.1:9/in/${i}`, events: ['invoice.paid'], description: `bench ${i}`, maxFailures: 10 });
    }
    await setup.stop();

    // The service as `npm start` runs it (API role), logging at info, one line per request, to /dev/null.
    const servicePort = await freePort();
    const serviceUrl = `http://127.0.0.1:${servicePort}`;
    const service = startProcess(
      [...SERVICE_NODE_FLAGS, ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), 'src/cli.ts', 'serve', '--role', 'api'],
      { ...env, PORT: String(servicePort), PUBLIC_BASE_URL: serviceUrl, LOG_LEVEL: 'info' },
    );
    children.push(service);
    const referencePort = await freePort();
    const referenceUrl = `http://127.0.0.1:${referencePort}`;
    const reference = startProcess(['bench/read.ts'], { READ_BENCH_REFERENCE: '1', DATABASE_URL: database.connectionUri, PORT: String(referencePort), EMPLOYER_ID: employerId, API_KEY: rawKey });
    children.push(reference);
    await Promise.all([waitUntilServing(serviceUrl, service), waitUntilServing(referenceUrl, reference)]);

    const headers = { 'x-api-key': rawKey, 'x-api-version': API_VERSION };
    const check = await fetch(`${serviceUrl}/api/employer/webhooks`, { headers });
    const body = (await check.json()) as { webhooks?: unknown[] };
    if (check.status !== 200 || body.webhooks?.length !== subscriptions) throw new Error(`the service answered ${check.status}: ${JSON.stringify(body)}`);
    const referenceBody = (await (await fetch(`${referenceUrl}/api/employer/webhooks`, { headers })).json()) as { webhooks: unknown[] };
    if (referenceBody.webhooks.length !== subscriptions) throw new Error(`the reference returned ${referenceBody.webhooks.length} subscriptions`);

    // Warm-up (JIT, connections, key cache), then the measured runs.
    await drive(serviceUrl, service.pid!, headers, 2);
    await drive(referenceUrl, reference.pid!, headers, 2);
    const runs: { service: Run[]; reference: Run[] } = { service: [], reference: [] };
    for (const which of ['service', 'reference', 'reference', 'service'] as const) {
      runs[which].push(await (which === 'service' ? drive(serviceUrl, service.pid!, headers, seconds) : drive(referenceUrl, reference.pid!, headers, seconds)));
    }

    const row = (name: string, run: Run) =>
      `${name.padEnd(10)} ${run.rps.toFixed(0).padStart(7)} req/s   p50 ${String(run.p50).padStart(3)} ms   p99 ${String(run.p99).padStart(3)} ms   CPU ${run.cpuMicrosPerRequest.toFixed(0).padStart(4)} µs/request   non-2xx ${run.non2xx}   errors ${run.errors}`;
    console.log(`GET /api/employer/webhooks (${subscriptions} subscriptions), x-api-key, ${CONNECTIONS} connections, ${seconds} s per run, autocannon`);
    for (const which of ['service', 'reference'] as const) runs[which].forEach((run) => console.log(row(which, run)));
    const mean = (list: Run[]) => list.reduce((sum, run) => sum + run.rps, 0) / list.length;
    const non2xx = runs.service.reduce((sum, run) => sum + run.non2xx + run.errors, 0);
    const meanCpu = (list: Run[]) => list.reduce((sum, run) => sum + run.cpuMicrosPerRequest, 0) / list.length;
    console.log(`ratio service/reference: ${(mean(runs.service) / mean(runs.reference)).toFixed(2)}   (service non-2xx or errors: ${non2xx})`);
    // Less sensitive to the machine's other load than req/s: the processes' own CPU time per request.
    console.log(`CPU per request, reference/service: ${(meanCpu(runs.reference) / meanCpu(runs.service)).toFixed(2)}`);

    await Promise.all(children.map(stopProcess));
    if (profile) {
      const file = (await readdir(profileDir)).find((name) => name.endsWith('.cpuprofile'));
      if (!file) throw new Error('the service wrote no CPU profile');
      console.log(`\nservice CPU profile (${join(profileDir, file)}), top self time (share of busy time):`);
      for (const { name, share } of topSelfTime(JSON.parse(await readFile(join(profileDir, file), 'utf8')), 40)) console.log(`${(share * 100).toFixed(1).padStart(5)} %  ${name}`);
    }
    if (non2xx > 0) process.exitCode = 1;
  } finally {
    await Promise.all(children.map(stopProcess));
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
    if (!profile) await rm(profileDir, { recursive: true, force: true });
  }
}
