// Prometheus metrics scraped from the running service during a workload, read with a Prometheus text
// parser: a request moves its route template's counter, a refusal its code's, a parked event the
// parked gauge, a delivery its outcome; GET /metrics refuses a caller without METRICS_SECRET, is not
// served at all without METRICS_SECRET or METRICS_PORT, and METRICS_PORT serves every process role its
// own (a worker-only process here).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capability } from '../../src/capability.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { dashboardExpressions, metricNamesOf, readDashboard } from '../support/dashboard.ts';
import { freePort } from '../support/ports.ts';
import { scrape, type Scrape } from '../support/prometheus.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, subscribe, waitUntil } from '../webhooks/helpers.ts';

const SECRET = 'metrics-secret-for-tests-0123456789';
const POISONED_PREFIX = 'Unprojectable';

/** A read model whose table refuses some employers' names: a real failing statement, so their event is parked. */
const probeProjection: Projection = {
  name: 'metrics-probe',
  tables: ['metrics_probe'],
  eventTypes: ['EmployerCreated'],
  async apply(tx, events) {
    for (const { data } of events) await tx.query(sql.unsafe`INSERT INTO metrics_probe (employer_id, name) VALUES (${String(data.employerId)}, ${String(data.name)})`);
  },
};
const probeCapability: Capability = { name: 'metrics-probe', projections: [probeProjection] };

async function onDatabase(databaseUri: string, text: string) {
  const client = new pg.Client({ connectionString: databaseUri });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

describe('metrics served by the API (METRICS_SECRET)', () => {
  let service: TestService;
  let stop: () => Promise<void>;
  let receiverUrl: string;
  const scrapeService = () => scrape(service.url, SECRET);
  /** Scrapes until `probe` holds on a scrape (values collected at scrape time move with the work behind them). */
  const scrapeUntil = (what: string, probe: (metrics: Scrape) => boolean) => waitUntil(what, async () => {
    const metrics = await scrapeService();
    return probe(metrics) && metrics;
  });

  beforeAll(async () => {
    const databaseUri = await createTestDatabaseUri();
    await onDatabase(databaseUri, `CREATE TABLE metrics_probe (employer_id text PRIMARY KEY, name text NOT NULL CHECK (name NOT LIKE '${POISONED_PREFIX}%'))`);
    const started = await startServiceWithReceiver({ databaseUri, env: { METRICS_SECRET: SECRET }, extraCapabilities: [probeCapability] });
    ({ service, stop } = started);
    receiverUrl = started.receiver.url;
  });
  afterAll(() => stop?.());

  it('refuses a scrape without the secret, or with another, in constant-time comparison of the bearer', async () => {
    const anonymous = await fetch(`${service.url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(await anonymous.json()).toMatchObject({ code: 'METRICS_SECRET_REQUIRED' });
    expect((await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${SECRET}x` } })).status).toBe(401);
    expect((await fetch(`${service.url}/metrics`, { headers: { authorization: SECRET } })).status).toBe(401);
    // Refused scrapes are refusals like any other.
    expect((await scrapeService()).value('http_auth_refusals_total', { code: 'METRICS_SECRET_REQUIRED' })).toBeGreaterThanOrEqual(3);
  });

  it('is not an operation of the API: /api/openapi does not list it', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths)).not.toContain('/metrics');
  });

  it('counts requests by route template (never the URL), method and status class, and refusals by code', async () => {
    const before = await scrapeService();
    const webhookId = randomUUID();
    for (let i = 0; i < 3; i++) expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${service.url}/no/such/${webhookId}`)).status).toBe(404);
    expect((await fetch(`${service.url}/api/employer/webhooks/${webhookId}`)).status).toBe(401);
    const after = await scrapeService();

    const healthz = { route: '/healthz', method: 'GET', status_class: '2xx' };
    expect(after.value('http_requests_total', healthz) - before.value('http_requests_total', healthz)).toBe(3);
    expect(after.families.find((family) => family.name === 'http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    const unmatched = { route: 'unmatched', method: 'GET', status_class: '4xx' };
    expect(after.value('http_requests_total', unmatched) - before.value('http_requests_total', unmatched)).toBe(1);
    const webhook = { route: '/api/employer/webhooks/:webhookId', method: 'GET', status_class: '4xx' };
    expect(after.value('http_requests_total', webhook) - before.value('http_requests_total', webhook)).toBe(1);
    expect(after.labelSets('http_requests_total').some((labels) => Object.values(labels).some((value) => value.includes(webhookId)))).toBe(false);
    const refused = { code: 'AUTHENTICATION_REQUIRED' };
    expect(after.value('http_auth_refusals_total', refused) - before.value('http_auth_refusals_total', refused)).toBe(1);
  });

  it('counts appends and reports the pools and the projections; a parked event raises the parked gauge', async () => {
    const before = await scrapeService();
    expect(before.value('projection_parked_events', { projection: 'metrics-probe' })).toBe(0);
    const fine = await service.createTenant();
    await service.createTenant({ name: `${POISONED_PREFIX} ${Date.now()}` });

    const after = await scrapeUntil('the parked event', (metrics) => metrics.value('projection_parked_events', { projection: 'metrics-probe' }) === 1);
    expect(after.value('event_store_appends_total', { outcome: 'ok' }) - before.value('event_store_appends_total', { outcome: 'ok' })).toBeGreaterThanOrEqual(2);
    expect(after.value('event_store_appended_events_total')).toBeGreaterThan(before.value('event_store_appended_events_total'));
    expect(after.value('event_store_append_duration_seconds')).toBeGreaterThan(before.value('event_store_append_duration_seconds'));
    expect(after.value('projection_parked_events', { projection: 'tenants' })).toBe(0);
    expect(after.value('projection_position', { projection: 'tenants' })).toBeGreaterThan(before.value('projection_position', { projection: 'tenants' }));
    expect(after.labelSets('projection_lag_events').map((labels) => labels.projection)).toEqual(expect.arrayContaining(['tenants', 'audit', 'metrics-probe']));
    expect(after.value('projection_lag_seconds', { projection: 'metrics-probe' })).toBeGreaterThanOrEqual(0);
    // The healthy employer's event, before the poisoned one, was applied: only the poisoned one is parked.
    expect((await service.ctx.db.pg.query('SELECT 1 FROM metrics_probe WHERE employer_id = $1', [fine.employerId])).rowCount).toBe(1);

    for (const pool of ['read-models', 'event-store', 'pg', 'worker']) expect(after.value('db_pool_max_connections', { pool })).toBeGreaterThan(0);
    const waits = after.families.find((family) => family.name === 'db_pool_wait_seconds');
    expect(Number(waits?.metrics[0]?.buckets?.['+Inf'])).toBeGreaterThan(0);
    expect(after.value('db_pool_connections', { pool: 'read-models' })).toBeGreaterThan(0);
    // Process metrics of a process that serves its own.
    expect(after.value('process_cpu_seconds_total')).toBeGreaterThan(0);
    // Every scrape-time read answered.
    expect(after.value('metrics_collect_failures_total')).toBe(0);
  });

  it('counts a webhook delivery by outcome with its end-to-end latency, and the worker\'s jobs by task', async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const { id } = await subscribe(api, `${receiverUrl}/metrics-hook`);
    const before = await scrapeService();
    expect((await api.post(`/api/employer/webhooks/${id}/ping`)).status).toBe(202);

    // The fan-out job makes an event's first attempts itself (src/webhooks/tasks.ts), and is counted once it ends.
    const fannedOut = { task: 'webhook_fan_out', outcome: 'success' };
    const after = await scrapeUntil('the delivered attempt and its job', (metrics) =>
      metrics.value('webhook_delivery_attempts_total', { outcome: 'delivered' }) === before.value('webhook_delivery_attempts_total', { outcome: 'delivered' }) + 1
      && metrics.value('graphile_worker_jobs_total', fannedOut) > before.value('graphile_worker_jobs_total', fannedOut));
    expect(after.value('webhook_delivery_latency_seconds')).toBe(before.value('webhook_delivery_latency_seconds') + 1);
    // The recovery task waits in the queue for its next minute.
    expect(after.value('graphile_worker_queue_jobs', { task: 'webhook_recover_attempts' })).toBeGreaterThanOrEqual(1);
  });

  it('observes a completed export\'s duration and size by kind', async () => {
    const tenant = await service.createTenant();
    const started = await fetch(`${service.url}/api/employer/export/csv`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    expect(started.status).toBe(202);
    // Only csv exports run here, so the parser's folding of labelled histograms (test/support/prometheus.ts) leaves the csv series.
    const observed = (metrics: Scrape, name: string) => Number(metrics.families.find((family) => family.name === name)?.metrics[0]?.buckets?.['+Inf'] ?? 0);
    const after = await scrapeUntil('the completed export', (metrics) => observed(metrics, 'export_duration_seconds') === 1);
    expect(observed(after, 'export_size_bytes')).toBe(1);
    expect(after.families.find((family) => family.name === 'export_size_bytes')?.metrics[0]?.buckets?.['1000']).toBe('1'); // the header line alone
  });

  it('exports every metric the Grafana dashboard queries', async () => {
    const exported = new Set((await scrapeService()).families.map((family) => family.name));
    const queried = dashboardExpressions(readDashboard()).flatMap(metricNamesOf);
    expect(queried.filter((name) => !exported.has(name))).toEqual([]);
    expect(new Set(queried).size).toBeGreaterThan(20);
  });
});

describe('metrics on METRICS_PORT', () => {
  let databaseUri: string;
  let worker: TestService;
  let api: TestService;

  beforeAll(async () => {
    databaseUri = await createTestDatabaseUri();
    worker = await startTestService({ databaseUri, roles: ['worker'], env: { METRICS_PORT: String(await freePort()), METRICS_SECRET: SECRET } });
    api = await startTestService({ databaseUri, roles: ['api'], env: { METRICS_PORT: String(await freePort()) } });
  });
  afterAll(async () => {
    await api?.stop();
    await worker?.stop();
  });

  it('serves a worker-only process its own metrics, behind the secret when one is set', async () => {
    expect(worker.url).toBe('');
    expect((await fetch(`${worker.metricsUrl}/metrics`)).status).toBe(401);
    // The recovery job is queued once the worker holds its lease.
    const metrics = await waitUntil('the queued recovery job', async () => {
      const scraped = await scrape(worker.metricsUrl!, SECRET);
      return scraped.value('graphile_worker_queue_jobs', { task: 'webhook_recover_attempts' }) >= 1 && scraped;
    });
    expect(metrics.value('db_pool_max_connections', { pool: 'worker' })).toBeGreaterThan(0);
    expect(metrics.families.map((family) => family.name)).not.toContain('http_requests_total');
    expect((await fetch(`${worker.metricsUrl}/other`)).status).toBe(404);
  });

  it('leaves the API port without /metrics; without METRICS_SECRET the separate port needs none', async () => {
    expect((await fetch(`${api.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
    const metrics = await scrape(api.metricsUrl!);
    expect(metrics.value('http_requests_total', { route: '/healthz', method: 'GET', status_class: '2xx' })).toBe(1);
    expect(metrics.families.map((family) => family.name)).not.toContain('graphile_worker_queue_jobs');
  });
});

describe('metrics without METRICS_SECRET or METRICS_PORT', () => {
  let service: TestService;
  beforeAll(async () => void (service = await startTestService({ roles: ['api'] })));
  afterAll(() => service?.stop());

  it('are not served: GET /metrics is 404 and no listener starts', async () => {
    const response = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
    expect(service.metricsUrl).toBeNull();
  });
});

describe('an operator command beside a process serving METRICS_PORT', () => {
  it('runs, leaving the port to the serving process', async () => {
    // The serving process's listener, as in a container where `npm run cli` runs beside `serve`.
    const taken = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const env = {
        ...(process.env as Record<string, string>),
        DATABASE_URL: await createTestDatabaseUri(),
        DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-metrics-cli-')),
        LOG_LEVEL: 'silent',
        METRICS_PORT: String(port),
      };
      const { stdout } = await promisify(execFile)(process.execPath, ['src/cli.ts', 'tenants', 'create', '--name', 'Acme', '--admin-email', 'admin@acme.test', '--json'], { env, cwd: process.cwd() });
      expect(JSON.parse(stdout).employerId).toMatch(/^emp_/);
    } finally {
      taken.close();
    }
  });
});
