// Issue 20, item 5, scaled down: one tenant floods the shared queue (CSV exports, Bulk Data kick-offs,
// simulations, queued pings) with a key at the highest rate limit allowed, its webhook receiver never
// answering. Each kind stops at its limit of work in flight with a documented 429 that changes
// nothing, and another tenant's export, simulation and webhook ping complete while the flood's
// backlog is still queued. Deterministic by construction: the flood is queued while no worker runs,
// and the worker that then starts meets the whole backlog at once; order, not time, is asserted.
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { employerJobArguments } from '../../src/worker/fair-share.ts';
import { startWorker, WORKER_CONCURRENCY } from '../../src/worker/runner.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { createTestDatabase, createTestDatabaseUri } from '../support/database.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, capabilitiesTrusting, subscribe, waitUntil, webhookEnv, type ApiClient, type ApiResponse } from '../webhooks/helpers.ts';

const LIMITS = {
  API_KEY_RATE_LIMIT_MAX_PER_MIN: '600',
  EXPORT_CSV_MAX_IN_FLIGHT: '2',
  SIMULATION_MAX_IN_FLIGHT: '2',
  WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT: '20',
  WORKER_JOBS_PER_EMPLOYER: '2',
  WORKER_RESERVE_CONCURRENCY: '4',
};
const SIMULATION = { months: 3, adoptionRate: 0.5, baselineMonthlyCostMinor: 1000, taperedMonthlyCostMinor: 600, currency: 'EUR' };

type Tenant = { employerId: string; session: ApiClient; keyHeaders: Record<string, string>; key: ApiClient };

let receiver: HttpsReceiver;
let databaseUri: string;
let api: TestService;
let stopApi: () => Promise<void>;
let worker: TestService | undefined;
const env = webhookEnv(LIMITS);

beforeAll(async () => {
  databaseUri = await createTestDatabaseUri();
  ({ service: api, receiver, stop: stopApi } = await startServiceWithReceiver({
    env: LIMITS,
    databaseUri,
    roles: ['api', 'projections'],
    // The flooding tenant's receiver never answers: each of its attempts holds a worker for 10 s.
    respond: (request) => (request.path.startsWith('/flooder') ? { hang: true } : { status: 200 }),
  }));
});
afterAll(async () => {
  await worker?.stop();
  await stopApi?.();
});

const SCOPES = ['export:create', 'export:read', 'fhir:read', 'simulate:run', 'webhook:manage'] as const;

async function tenant(rateLimitPerMinute?: number): Promise<Tenant> {
  const created = await api.createTenant();
  const { rawKey } = await createApiKey(api, created, { scopes: [...SCOPES], ...(rateLimitPerMinute ? { rateLimitPerMinute } : {}) });
  const headers = keyHeaders(rawKey);
  return { employerId: created.employerId, session: apiClient(api, created), keyHeaders: headers, key: apiClient(api, { headers }) };
}

/** Sends `count` requests at once; their answers. */
const flood = (count: number, send: () => Promise<ApiResponse>) => Promise.all(Array.from({ length: count }, send));
const statuses = (answers: ApiResponse[]) => answers.map((answer) => answer.status).sort();
const bulkKickOff = (client: Tenant) =>
  fetch(`${api.url}/api/fhir/$export`, { headers: { ...client.keyHeaders, prefer: 'respond-async' } }).then(async (response) => ({
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    body: await response.json().catch(() => null),
  }));

describe('one tenant flooding the shared queue', () => {
  it('is refused past each limit of work in flight, and another tenant\'s export, simulation and webhook ping complete while its backlog waits', async () => {
    // Its key has the highest rate limit the operator allows.
    const flooder = await tenant(Number(LIMITS.API_KEY_RATE_LIMIT_MAX_PER_MIN));
    const victim = await tenant();
    const flooderHook = await subscribe(flooder.session, `${receiver.url}/flooder`, { events: ['test.ping', 'export.ready'] });
    const victimHook = await subscribe(victim.session, `${receiver.url}/victim`, { events: ['test.ping'] });

    // No worker runs yet: whatever is admitted stays in flight.
    const exports = await flood(6, () => flooder.key.post('/api/employer/export/csv'));
    expect(statuses(exports)).toEqual([202, 202, 429, 429, 429, 429]);
    const refusedExport = exports.find((answer) => answer.status === 429)!;
    expect(refusedExport.body).toMatchObject({ code: 'TOO_MANY_EXPORTS_IN_FLIGHT', limit: 2, retryAfterSeconds: expect.any(Number) });

    const simulations = await flood(4, () => flooder.key.post('/api/employer/simulations', SIMULATION));
    expect(statuses(simulations)).toEqual([202, 202, 429, 429]);
    expect(simulations.find((answer) => answer.status === 429)!.body).toMatchObject({ code: 'TOO_MANY_SIMULATIONS_IN_FLIGHT', limit: 2 });

    const pings = await flood(24, () => flooder.key.post(`/api/employer/webhooks/${flooderHook.id}/ping`));
    expect(statuses(pings)).toEqual([...Array(20).fill(202), ...Array(4).fill(429)]);
    expect(pings.find((answer) => answer.status === 429)!.body).toMatchObject({ code: 'TOO_MANY_DELIVERIES_IN_FLIGHT', limit: 20 });

    const kickOffs = await Promise.all([bulkKickOff(flooder), bulkKickOff(flooder), bulkKickOff(flooder)]);
    expect(kickOffs.map((answer) => answer.status).sort()).toEqual([202, 429, 429]);
    const refusedKickOff = kickOffs.find((answer) => answer.status === 429)!;
    expect(Number(refusedKickOff.retryAfter)).toBeGreaterThan(0);
    expect(refusedKickOff.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'throttled' }] });

    // The refusals changed nothing: two CSV exports and one Bulk Data export, two simulations.
    const pool = api.ctx.db.slonik;
    const count = (query: ReturnType<typeof sql.unsafe>) => pool.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM (${query}) AS rows`);
    expect(await count(sql.unsafe`SELECT kind FROM exports WHERE employer_id = ${flooder.employerId}`)).toBe(3);
    // Its jobs are the flooder's (the flag by which the worker keeps it to its share).
    expect(await count(sql.unsafe`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'export_run' AND flags ? ${`employer:${flooder.employerId}`}`)).toBe(3);

    // The worker starts on the flood: more hanging deliveries (20 pings, 3 export.ready) than its main
    // runner has workers (16). Each attempt hangs until its 10 s timeout.
    worker = await startTestService({ env, databaseUri, roles: ['worker'], capabilities: capabilitiesTrusting(receiver) });
    // Waiting: deliveries not tried yet, and fan-out jobs not started (a fan-out job creates its
    // event's deliveries and makes their first attempts itself).
    const flooderDeliveries = () => pool.one(sql.type(z.object({ in_flight: z.number(), waiting: z.number(), ended: z.number() }))`
      SELECT count(*) FILTER (WHERE attempt_lease IS NOT NULL)::int AS in_flight,
             count(*) FILTER (WHERE status = 'pending' AND attempts = 0 AND attempt_lease IS NULL)::int
               + (SELECT count(*)::int FROM graphile_worker.jobs WHERE task_identifier = 'webhook_fan_out' AND locked_at IS NULL
                    AND flags ? ${`employer:${flooder.employerId}`}) AS waiting,
             (SELECT count(*)::int FROM webhook_delivery_attempts a JOIN webhook_deliveries d USING (delivery_id) WHERE d.employer_id = ${flooder.employerId}) AS ended
      FROM webhook_deliveries WHERE employer_id = ${flooder.employerId}`);
    await waitUntil('every main worker to hang on the flooder\'s receiver', async () => (await flooderDeliveries()).in_flight >= WORKER_CONCURRENCY);

    // The other tenant's work, queued while the flood's backlog waits.
    const victimExport = await victim.key.post('/api/employer/export/csv');
    expect(victimExport.status).toBe(202);
    const victimSimulation = await victim.key.post('/api/employer/simulations', SIMULATION);
    expect(victimSimulation.status).toBe(202);
    expect((await victim.key.post(`/api/employer/webhooks/${victimHook.id}/ping`)).status).toBe(202);
    await waitUntil('the victim\'s ping', () => receiver.requests.some((request) => request.path.startsWith('/victim')));
    const whenVictimPinged = await flooderDeliveries();
    await waitUntil('the victim\'s export', async () => (await victim.key.get(`/api/employer/export/csv/exports/${victimExport.body.exportId}`)).body.status === 'completed');
    await waitUntil('the victim\'s simulation', async () => (await victim.key.get(`/api/employer/simulations/${victimSimulation.body.id}`)).body.status === 'completed');

    // The victim waited for none of the flood's attempts to end (the reserve workers served it), and
    // the flood's backlog was still waiting.
    expect(whenVictimPinged.ended).toBe(0);
    expect(whenVictimPinged.waiting).toBeGreaterThan(0);

    // Finished work leaves its admission: the flooder's simulations completed and it may run another.
    for (const simulation of simulations.filter((answer) => answer.status === 202)) {
      await waitUntil('a flooder simulation', async () => (await flooder.key.get(`/api/employer/simulations/${simulation.body.id}`)).body.status === 'completed');
    }
    expect((await flooder.key.post('/api/employer/simulations', SIMULATION)).status).toBe(202);
  });
});

describe('the order of employers\' jobs', () => {
  it('runs the job of an employer that queued little before the backlog of one that queued much, each employer\'s in order', async () => {
    const database = await createTestDatabase();
    const workerPool = new pg.Pool({ connectionString: database.connectionUri, max: 4 });
    const ran: string[] = [];
    const worker = await startWorker({ pgPool: workerPool, tasks: { record: async (payload) => void ran.push((payload as { name: string }).name) }, concurrency: 1 });
    try {
      // Queued in one transaction, so the worker meets them all at once.
      await database.db.slonik.transaction(async (tx) => {
        const queue = (employerId: string, name: string) =>
          tx.query(sql.unsafe`SELECT graphile_worker.add_job('record', ${sql.jsonb({ name })}::json, ${employerJobArguments(employerId)})`);
        for (let index = 0; index < 10; index++) await queue('emp_busy', `busy ${index}`);
        await queue('emp_quiet', 'quiet');
      });
      await waitUntil('every job to run', () => ran.length === 11);
    } finally {
      await worker.stop();
      await workerPool.end();
      await database.cleanup();
    }
    // First in, first out would have run the quiet employer's job last.
    expect(ran.indexOf('quiet')).toBeLessThanOrEqual(1);
    expect(ran.filter((name) => name !== 'quiet')).toEqual(Array.from({ length: 10 }, (_, index) => `busy ${index}`));
  });
});
