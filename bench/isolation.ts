// Tenant isolation under attack. The service runs as its own process (every role, as `npm start`;
// TRUST_PROXY, so each tenant's requests come from its own address, as through a load balancer).
// Tenant B runs a steady, light workload: a key-authenticated GET every 100 ms, a CSV export of its
// 6 patients and a queued webhook ping (to a local HTTPS receiver) every 5 s, each export and ping
// once the one before it has completed. First B alone, then while tenant A, in turn:
//   (a) posts junk SAML responses (~690 KB SAMLResponse forms) to its callback, 6 at a time, waiting
//       out every 429 (the rate it is allowed);
//   (b) uploads oversized cohort bodies ({"patients":[1,1,...]}, 4,000,000 items, 8 MB), 2 at a time;
//   (c) floods CSV exports, Bulk Data kick-offs and queued pings (to a receiver that never answers)
//       with a key at the highest rate limit allowed (API_KEY_RATE_LIMIT_MAX_PER_MIN), 4 at a time,
//       using all of it: as many requests a second as the limit allows in a minute / 60;
//   (d) presents invalid API keys from B's address, 4 at a time, waiting out every 429.
// A waits out Retry-After on 429 RATE_LIMITED (its allowed rate) and ignores other refusals; its client
// runs in a worker thread (bench/workers/isolation-attacker.ts), so its own work never delays B's
// requests. Printed per phase: B's GETs (and failures), p50/p99 latency and the p99's ratio to B alone,
// B's export and webhook completion times (max), the CPU the service used, and the answers A got. Goals: p99 at most 2x alone, export and
// webhook done within 10 s, in every phase.
// With `split`, the API runs in one process and the worker and projections in another, as
// docker-compose.yml runs them.
//   npm run bench -- isolation [seconds per phase=30] [A's patients=20000] [attacks=abcd] [one|split]
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../src/config.ts';
import { createApiKey } from '../src/api-keys/commands.ts';
import { startService } from '../src/main.ts';
import { updateSsoConfiguration } from '../src/sso/commands.ts';
import { ssoConfigurationUpdateSchema } from '../src/sso/settings-input.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { createWebhook } from '../src/webhooks/commands.ts';
import { startHttpsReceiver } from '../test/support/https-receiver.ts';
import { createTestIdp } from '../test/support/saml-idp.ts';
import { cpuSecondsOf, percentile, serviceProcessSettings, startBenchDatabase, startServiceProcess, stopServiceProcess, type ServiceProcess } from './support.ts';
import type { AttackerData, AttackName } from './workers/isolation-attacker.ts';

const B_ADDRESS = '198.51.100.20';
const A_ADDRESS = '203.0.113.10';
const GET_EVERY_MS = 100;
const EXPORT_AND_PING_EVERY_MS = 5_000;
const POLL_EVERY_MS = 100;
/** How long after its phase an export or ping of B may still complete before it counts as not done. */
const LATE_LIMIT_MS = 120_000;
const COHORT_ROWS_PER_UPLOAD = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Answer = { status: number; retryAfter: string | null; body?: any };
/** How long an export or ping of B took, or why it has no time: refused when asked, or not done in time. */
type Completion = number | 'refused' | 'not done';
type PhaseResult = {
  name: string;
  getLatencies: number[];
  /** Answers other than 200, by status and code. */
  getFailures: Map<string, number>;
  exportMs: Completion[];
  pingMs: Completion[];
  /** The answers A got, by status and code. */
  attacker: Map<string, number>;
  /** CPU seconds the service's processes used during the phase. */
  serviceCpuSeconds: number;
};

/** `429 TOO_MANY_EXPORTS_IN_FLIGHT`, `401 INVALID_API_KEY`, `429 throttled` (an OperationOutcome), `0` (no answer). */
function answerKind(answer: Answer): string {
  const code = answer.body?.code ?? answer.body?.issue?.[0]?.code;
  return typeof code === 'string' ? `${answer.status} ${code}` : String(answer.status);
}

function count(counts: Map<string, number>, key: string) {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

export default async function isolationBench(args: string[]) {
  const phaseSeconds = Number(args[0] ?? 30);
  const flooderPatients = Number(args[1] ?? 20_000);
  const chosenAttacks = args[2] ?? 'abcd';
  const split = args[3] === 'split';
  const database = await startBenchDatabase();
  const receiver = await startHttpsReceiver();
  // The receiver is on 127.0.0.1 with a certificate of its own; clients' addresses come from X-Forwarded-For.
  const { env, url, dataDir } = await serviceProcessSettings(database, 'isolation', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', TRUST_PROXY: '127.0.0.1' });
  const caFile = join(dataDir, 'receiver-ca.pem');
  await writeFile(caFile, receiver.ca);
  env.NODE_EXTRA_CA_CERTS = caFile;
  const ceiling = loadConfig(env).API_KEY_RATE_LIMIT_MAX_PER_MIN;

  // B's pings are answered and timed; A's receiver never answers (its attempts time out after 10 s).
  const pingArrivals: number[] = [];
  receiver.respondWith((request) => {
    if (request.path.startsWith('/a')) return { hang: true };
    pingArrivals.push(performance.now());
    request.rawBody = Buffer.alloc(0);
    return { status: 200 };
  });

  const services: ServiceProcess[] = [];
  const setup = await startService({ config: loadConfig(env), roles: ['projections'] });
  try {
    const actor = { type: 'system', id: 'bench' } as const;
    const tenantOf = async (name: string) => {
      const { employerId, adminUserId } = await createEmployer(setup.ctx, { tenantId: null, actor }, { name, adminEmail: `admin@${name.toLowerCase()}.bench.test` });
      // Each attack gets a key of its own: one that used up its allowance would hold the next attack back.
      const keyOf = async (keyName: string) => (await createApiKey(setup.ctx, { tenantId: employerId, actor }, {
        name: keyName, scopes: ['cohort:write', 'export:create', 'export:read', 'fhir:read', 'webhook:manage'], allowedIpCidrs: [], expiresAt: null,
        rateLimitPerMinute: ceiling, createdBy: adminUserId, now: Date.now(),
      })).rawKey;
      const rawKey = await keyOf('bench');
      const attackKeys = { a: await keyOf('attack a'), b: await keyOf('attack b'), c: await keyOf('attack c'), d: await keyOf('attack d') };
      const { webhookId } = await createWebhook(setup.ctx, { tenantId: employerId, actor }, {
        url: `${receiver.url}/${name === 'A' ? 'a' : 'b'}`, events: ['test.ping'], description: null, maxFailures: 1000,
      });
      return { employerId, adminUserId, rawKey, attackKeys, webhookId };
    };
    const a = await tenantOf('A');
    const b = await tenantOf('B');
    const idp = await createTestIdp();
    await updateSsoConfiguration(setup.ctx, { tenantId: a.employerId, actor: { type: 'user', id: a.adminUserId } }, {
      update: ssoConfigurationUpdateSchema.parse({ samlEnabled: true, samlEntryPoint: idp.entryPoint, samlCertificate: idp.certificatePem, samlIssuer: idp.issuer }),
      metadataFetch: { allowPrivateNetworks: true },
      trustChanges: 'apply',
    });
    await setup.stop();

    if (split) services.push(await startServiceProcess('api', env), await startServiceProcess('worker,projections', env));
    else services.push(await startServiceProcess('all', env));
    const call = async (from: string, path: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Answer & { body: any }> => {
      const response = await fetch(`${url}${path}`, { ...init, headers: { 'x-forwarded-for': from, ...init.headers } });
      const text = await response.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON (a file, an empty body)
      }
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body };
    };
    const keyed = (rawKey: string, extra: Record<string, string> = {}) => ({ 'x-api-key': rawKey, 'x-api-version': '2026-02-01', ...extra });
    type Init = RequestInit & { headers?: Record<string, string> };
    const withKey = (from: string, rawKey: string) => (path: string, init: Init = {}) => call(from, path, { ...init, headers: keyed(rawKey, init.headers) });
    const asB = withKey(B_ADDRESS, b.rawKey);
    const asA = withKey(A_ADDRESS, a.rawKey);
    const upload = async (client: typeof asA, from: number, count: number) => {
      const patients = Array.from({ length: count }, (_, i) => ({ email: `member.${from + i}@bench.test`, firstName: `First${from + i}`, lastName: `Last${from + i}` }));
      const answer = await client('/api/employer/upload-cohort', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ patients }) });
      if (answer.status !== 201) throw new Error(`cohort upload: ${answer.status} ${JSON.stringify(answer.body)}`);
    };
    await upload(asB, 0, 6);
    for (let from = 0; from < flooderPatients; from += COHORT_ROWS_PER_UPLOAD) await upload(asA, from, Math.min(COHORT_ROWS_PER_UPLOAD, flooderPatients - from));
    console.log(`isolation: the service in ${split ? 'two processes (API; worker and projections)' : 'one process (every role)'}; tenant B has 6 patients, tenant A ${flooderPatients} and SAML enabled; ` +
      `both keys at the rate-limit ceiling (${ceiling}/min). ${phaseSeconds} s per phase.`);

    /** B's workload until `stopAt`; resolves once its last export and ping have completed (or LATE_LIMIT_MS after). */
    const runB = async (stopAt: number) => {
      const getLatencies: number[] = [];
      const getFailures = new Map<string, number>();
      const gets = (async () => {
        while (performance.now() < stopAt) {
          const started = performance.now();
          const answer = await asB('/api/employer/webhooks');
          if (answer.status === 200) getLatencies.push(performance.now() - started);
          else count(getFailures, answerKind(answer));
          await sleep(Math.max(0, started + GET_EVERY_MS - performance.now()));
        }
      })();
      const exportMs: Completion[] = [];
      const exports = (async () => {
        while (performance.now() < stopAt) {
          const started = performance.now();
          const answer = await asB('/api/employer/export/csv', { method: 'POST' });
          let done = false;
          while (answer.status === 202 && performance.now() < stopAt + LATE_LIMIT_MS) {
            const polled = await asB(`/api/employer/export/csv/exports/${answer.body.exportId}`);
            if (polled.status === 200 && polled.body.status === 'completed') {
              done = true;
              break;
            }
            await sleep(POLL_EVERY_MS);
          }
          exportMs.push(answer.status !== 202 ? 'refused' : done ? performance.now() - started : 'not done');
          await sleep(Math.max(0, started + EXPORT_AND_PING_EVERY_MS - performance.now()));
        }
      })();
      const pingMs: Completion[] = [];
      const pings = (async () => {
        while (performance.now() < stopAt) {
          const started = performance.now();
          const arrived = pingArrivals.length;
          const answer = await asB(`/api/employer/webhooks/${b.webhookId}/ping`, { method: 'POST' });
          while (answer.status === 202 && pingArrivals.length === arrived && performance.now() < stopAt + LATE_LIMIT_MS) await sleep(POLL_EVERY_MS / 4);
          pingMs.push(answer.status !== 202 ? 'refused' : pingArrivals.length > arrived ? pingArrivals[arrived]! - started : 'not done');
          await sleep(Math.max(0, started + EXPORT_AND_PING_EVERY_MS - performance.now()));
        }
      })();
      await Promise.all([gets, exports, pings]);
      return { getLatencies, getFailures, exportMs, pingMs };
    };

    const attacks: Array<{ letter: AttackName; name: string; loops: number; perSecond?: number }> = [
      { letter: 'a', name: '(a) junk SAML (691 KB forms)', loops: 6 },
      { letter: 'b', name: '(b) cohort bodies (7.6 MB)', loops: 2 },
      { letter: 'c', name: '(c) export, Bulk Data and ping flood', loops: 4, perSecond: ceiling / 60 },
      { letter: 'd', name: "(d) invalid keys from B's address", loops: 4 },
    ];
    /** Runs one attack in its worker thread for `phaseMs`; resolves with the answers A got. */
    const runA = (attack: (typeof attacks)[number], phaseMs: number) =>
      new Promise<Map<string, number>>((resolve, reject) => {
        const workerData: AttackerData = {
          url, attack: attack.letter, loops: attack.loops, perSecond: attack.perSecond ?? Infinity, phaseMs,
          aAddress: A_ADDRESS, bAddress: B_ADDRESS, a: { employerId: a.employerId, rawKey: a.attackKeys[attack.letter], webhookId: a.webhookId },
        };
        const worker = new Worker(new URL('./workers/isolation-attacker.ts', import.meta.url), { workerData });
        worker.once('message', resolve);
        worker.once('error', reject);
      });
    const serviceCpuSeconds = async () => (await Promise.all(services.map((service) => cpuSecondsOf(service.child.pid!)))).reduce((sum, seconds) => sum + seconds, 0);

    const results: PhaseResult[] = [];
    const phase = async (name: string, attack?: (typeof attacks)[number]) => {
      const cpuBefore = await serviceCpuSeconds();
      const stopAt = performance.now() + phaseSeconds * 1000;
      const [workload, attacker] = await Promise.all([runB(stopAt), attack ? runA(attack, phaseSeconds * 1000) : Promise.resolve(new Map<string, number>())]);
      results.push({ name, ...workload, attacker, serviceCpuSeconds: (await serviceCpuSeconds()) - cpuBefore });
      printPhase(results[0]!, results.at(-1)!);
      // Let the service settle: B's GET answers in its usual time again.
      for (let tries = 0; tries < 60; tries++) {
        const started = performance.now();
        if ((await asB('/api/employer/webhooks')).status === 200 && performance.now() - started < 50) break;
        await sleep(1000);
      }
    };
    console.log(`${'phase'.padEnd(40)} ${'GETs'.padStart(5)} ${'failed'.padStart(6)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'p50/alone'.padStart(9)} ${'p99/alone'.padStart(9)} ` +
      `${'export max s'.padStart(12)} ${'webhook max s'.padStart(13)} ${'CPU s'.padStart(6)} ${'goals'.padStart(5)}  A's answers`);
    // Warm-up, not measured: the service's caches, JIT and pools settle before B alone is measured.
    await runB(performance.now() + 10_000);
    await phase('B alone');
    for (const attack of attacks.filter((candidate) => chosenAttacks.includes(candidate.letter))) await phase(attack.name, attack);
    console.log('goals: p99/alone <= 2, export and webhook <= 10 s, no failed GET, in every phase');
  } finally {
    await setup.stop().catch(() => {});
    for (const service of services) await stopServiceProcess(service);
    await receiver.close();
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

function printPhase(alone: PhaseResult, result: PhaseResult) {
  const sorted = [...result.getLatencies].sort((x, y) => x - y);
  const aloneSorted = [...alone.getLatencies].sort((x, y) => x - y);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const failed = [...result.getFailures.values()].reduce((sum, n) => sum + n, 0);
  const slowest = (times: Completion[]) => {
    const missing = times.filter((time) => typeof time !== 'number');
    if (missing.length > 0) return `${missing.length}/${times.length} ${missing.includes('not done') ? 'not done' : 'refused'}`;
    return times.length === 0 ? 'none' : (Math.max(...(times as number[])) / 1000).toFixed(2);
  };
  const withinGoal = (times: Completion[]) => times.length > 0 && times.every((time) => typeof time === 'number' && time <= 10_000);
  const met = failed === 0 && p99 <= 2 * percentile(aloneSorted, 99) && withinGoal(result.exportMs) && withinGoal(result.pingMs);
  const histogram = (counts: Map<string, number>) => [...counts].sort(([x], [y]) => x.localeCompare(y)).map(([kind, n]) => `${kind} x${n}`).join(', ');
  console.log(`${result.name.padEnd(40)} ${String(sorted.length + failed).padStart(5)} ${String(failed).padStart(6)} ${p50.toFixed(1).padStart(7)} ${p99.toFixed(1).padStart(7)} ` +
    `${(p50 / percentile(aloneSorted, 50)).toFixed(2).padStart(9)} ${(p99 / percentile(aloneSorted, 99)).toFixed(2).padStart(9)} ${slowest(result.exportMs).padStart(12)} ` +
    `${slowest(result.pingMs).padStart(13)} ${result.serviceCpuSeconds.toFixed(1).padStart(6)} ${(met ? 'met' : 'NOT').padStart(5)}  ${histogram(result.attacker)}${failed > 0 ? `; B's failed GETs: ${histogram(result.getFailures)}` : ''}`);
}
