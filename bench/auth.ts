// What the API-key pipeline costs: the same trivial route (test/support/api-keys.ts probe routes) with
// no authentication and behind the full pipeline (key cache, CIDR allowlist, shared rate limiter,
// version and scope checks, telemetry), in one run against 127.0.0.1. The server runs on a fresh
// embedded Postgres in this thread; the load comes from a worker thread (its own event loop, so on
// two cores client and server do not share one) as a closed loop of undici requests over keep-alive
// connections, for a fixed time with a cap on the count. The two run in alternating rounds (order
// swapped each round) so that load from elsewhere on the machine hits both alike; throughput is the
// median of the rounds, latency percentiles are over every request of all rounds.
//   npm run bench -- auth [seconds per round=3] [rounds=3] [connections=16]
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';

type Load = { url: string; path: string; headers: Record<string, string>; seconds: number; connections: number; maxRequests: number };
type Round = { latencies: Float64Array; non2xx: number; seconds: number };

if (!isMainThread) parentPort!.postMessage(await generateLoad(workerData as Load));

/** Closed loop: `connections` callers each send the next request when the last one answered. */
async function generateLoad(load: Load): Promise<Round> {
  const pool = new Pool(load.url, { connections: load.connections });
  const latencies: number[] = [];
  let non2xx = 0;
  const started = performance.now();
  const until = started + load.seconds * 1000;
  await Promise.all(Array.from({ length: load.connections }, async () => {
    while (performance.now() < until && latencies.length < load.maxRequests) {
      const sent = performance.now();
      const response = await pool.request({ origin: load.url, path: load.path, method: 'GET', headers: load.headers });
      await response.body.dump();
      latencies.push(performance.now() - sent);
      if (response.statusCode >= 300) non2xx += 1;
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return { latencies: Float64Array.from(latencies), non2xx, seconds };
}

function runLoad(load: Load): Promise<Round> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: load });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

type Summary = { rps: number; p50: number; p99: number; requests: number; non2xx: number };

function summarise(rounds: Round[]): Summary {
  const perRound = rounds.map((round) => round.latencies.length / round.seconds).sort((a, b) => a - b);
  const all = Float64Array.from(rounds.flatMap((round) => [...round.latencies])).sort();
  const at = (q: number) => all[Math.min(all.length - 1, Math.floor(q * all.length))] ?? NaN;
  return {
    rps: perRound[Math.floor(perRound.length / 2)] ?? NaN,
    p50: at(0.5),
    p99: at(0.99),
    requests: all.length,
    non2xx: rounds.reduce((sum, round) => sum + round.non2xx, 0),
  };
}

export default async function benchAuth(args: string[]) {
  const seconds = Number(args[0] ?? 3);
  const rounds = Number(args[1] ?? 3);
  const connections = Number(args[2] ?? 16);
  const { startEmbeddedPostgres } = await import('../src/db/embedded-postgres.ts');
  const { freePort } = await import('../test/support/ports.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { startService } = await import('../src/main.ts');
  const { capabilities } = await import('../src/capabilities.ts');
  const { createEmployer } = await import('../src/tenants/commands.ts');
  const { createApiKey } = await import('../src/api-keys/commands.ts');
  const { probeCapability, PROBE_SCOPE } = await import('../test/support/api-keys.ts');

  const dataDir = await mkdtemp(join(tmpdir(), 'ei-bench-'));
  await chmod(dataDir, 0o755); // Postgres runs as the `postgres` user the package creates when we are root
  const database = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false });
  const service = await startService({
    config: loadConfig({ NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: database.connectionUri, DATA_DIR: dataDir, LOG_LEVEL: 'warn', ENCRYPTION_KEY: '0'.repeat(64), API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000000' }),
    capabilities: [...capabilities, probeCapability],
  });
  try {
    const actor = { type: 'system', id: 'bench' } as const;
    const { employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor }, { name: 'Bench', adminEmail: 'bench@example.test' });
    // A limit the bench cannot reach, so every request passes the whole pipeline (the limiter still leases permits).
    const { rawKey } = await createApiKey(service.ctx, { tenantId: employerId, actor }, {
      name: 'bench', scopes: [PROBE_SCOPE], allowedIpCidrs: ['127.0.0.0/8', '::1/128'], expiresAt: null, rateLimitPerMinute: 1_000_000, createdBy: adminUserId,
      now: Date.now(),
    });

    const base = { url: service.url!, seconds, connections, maxRequests: 2_000_000 };
    const open: Load = { ...base, path: '/probe/open', headers: {} };
    const keyed: Load = { ...base, path: '/probe/scoped', headers: { 'x-api-key': rawKey, 'x-api-version': '2026-02-01' } };
    await runLoad({ ...open, seconds: 1 }); // warm-up of both paths (JIT, connections, key cache)
    await runLoad({ ...keyed, seconds: 1 });
    const openRounds: Round[] = [];
    const keyedRounds: Round[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['open', 'keyed'] as const) : (['keyed', 'open'] as const);
      for (const which of order) (which === 'open' ? openRounds : keyedRounds).push(await runLoad(which === 'open' ? open : keyed));
    }
    const openSummary = summarise(openRounds);
    const keyedSummary = summarise(keyedRounds);
    const row = (name: string, r: Summary) =>
      `${name.padEnd(24)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(3)} ms   p99 ${r.p99.toFixed(3)} ms   (${r.requests} requests, ${r.non2xx} non-2xx)`;
    console.log(`GET on 127.0.0.1, ${connections} connections, ${rounds} rounds of ${seconds} s each; undici closed loop in a worker thread`);
    console.log(row('no authentication', openSummary));
    console.log(row('full API-key pipeline', keyedSummary));
    console.log(`throughput ratio (pipeline / none): ${(keyedSummary.rps / openSummary.rps).toFixed(2)}   added p50: ${(keyedSummary.p50 - openSummary.p50).toFixed(3)} ms`);
    if (keyedSummary.non2xx > 0 || openSummary.non2xx > 0) console.log('WARNING: some responses were not 2xx; the figures are not comparable.');
  } finally {
    await service.stop();
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
