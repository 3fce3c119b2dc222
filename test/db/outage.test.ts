// A real Postgres stopped and started again under a running service (all roles in one process): while
// it is down every route answers 503 in its own error shape (never 500, never a hang) and readiness says
// so within 2 s; when it returns, the pools, the LISTEN connection, the projection runner and the worker
// resume by themselves, and every write acknowledged before, during or after the outage is there.
// The run's shared Postgres is not the one stopped: this test starts its own.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Capability } from '../../src/capability.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded-postgres.ts';
import { fhirErrorShape } from '../../src/patients/fhir/outcome.ts';
import { defineRoute } from '../../src/http/route.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import { freePort } from '../support/ports.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, waitUntil, type ApiClient } from '../webhooks/helpers.ts';

let dataDir: string;
let port: number;
let postgres: EmbeddedDatabase;
let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;
const startPostgres = () => startEmbeddedPostgres({ dataDir, port, databaseName: 'outage' });

/** FHIR routes are yet to come: a route reading the database in their error shape stands in for them. */
const fhirStandIn: Capability = {
  name: 'fhir-stand-in',
  routes: [
    async (fastify, { ctx }) => {
      defineRoute(fastify, ctx, {
        method: 'GET',
        url: '/test/fhir/Patient',
        summary: 'Test route in the FHIR error shape',
        tags: ['Test'],
        auth: { public: true },
        errorShape: fhirErrorShape,
        responses: { 200: { description: 'ok' } },
        handler: async () => ({ resourceType: 'Bundle', total: await ctx.db.slonik.oneFirst(sql.unsafe`SELECT 0`) }),
      });
    },
  ],
};

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'ei-outage-pg-'));
  port = await freePort();
  postgres = await startPostgres();
  ({ service, receiver, stop } = await startServiceWithReceiver({ databaseUri: postgres.connectionUri, extraCapabilities: [fhirStandIn] }));
});
afterAll(async () => {
  await stop?.();
  await postgres?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Creates webhooks one after another until stopped, keeping the id of every one acknowledged with 201. */
function startWriter(api: ApiClient) {
  const acknowledged: string[] = [];
  const refusals: Array<{ status: number; body: any }> = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const response = await api.post('/api/employer/webhooks', { url: `${receiver.url}/in`, events: ['test.ping'] });
      if (response.status === 201) acknowledged.push(response.body.id);
      else {
        refusals.push(response);
        await new Promise((resolve) => setTimeout(resolve, 50)); // pacing while refused, not a wait for correctness
      }
    }
  })();
  return { acknowledged, refusals, stop: async () => ((running = false), await done) };
}

describe('a database outage under a running service', () => {
  it('answers 503 while Postgres is down and recovers by itself, losing no acknowledged write', async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const sso = await api.post('/api/employer/sso', { scimEnabled: true });
    expect(sso.status).toBe(200);
    const scimHeaders = { authorization: `Bearer ${sso.body.scimBearerToken}` };
    const writer = startWriter(api);
    await waitUntil('writes before the outage', () => writer.acknowledged.length >= 5);

    await postgres.stop();
    const stoppedAt = Date.now();
    const outageAnswer = await waitUntil('a 503 during the outage', async () => {
      const response = await fetch(`${service.url}/api/employer/webhooks`, { headers: service.sessionHeaders(tenant.cookie) });
      return response.status === 503 ? response : undefined;
    }, 5000);
    expect(Date.now() - stoppedAt).toBeLessThan(5000);
    expect(outageAnswer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await outageAnswer.json()).toEqual({ code: 'DATABASE_UNAVAILABLE', message: expect.any(String), requestId: expect.any(String) });

    const readinessAskedAt = Date.now();
    const readiness = await fetch(`${service.url}/readyz`);
    expect(Date.now() - readinessAskedAt).toBeLessThan(2000);
    expect(readiness.status).toBe(503);

    const scim = await fetch(`${service.url}/api/scim/v2/Users`, { headers: scimHeaders });
    expect(scim.status).toBe(503);
    expect(scim.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await scim.json()).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '503' });
    const fhir = await fetch(`${service.url}/test/fhir/Patient`);
    expect(fhir.status).toBe(503);
    expect(fhir.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(await fhir.json()).toEqual({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'transient', diagnostics: expect.any(String) }] });
    await waitUntil('writes refused during the outage', () => writer.refusals.length >= 3, 5000);

    postgres = await startPostgres();
    const restartedAt = Date.now();
    // Read-your-writes again: a webhook created now is readable at once, as its creator expects.
    await waitUntil('a write readable at once after the restart', async () => {
      const created = await api.post('/api/employer/webhooks', { url: `${receiver.url}/after`, events: ['test.ping'] });
      if (created.status !== 201) return false;
      return (await api.get(`/api/employer/webhooks/${created.body.id}`)).status === 200;
    }, 30_000);
    expect(Date.now() - restartedAt).toBeLessThan(30_000);
    const acknowledgedBefore = writer.acknowledged.length;
    await waitUntil('writes acknowledged after the restart', () => writer.acknowledged.length >= acknowledgedBefore + 5, 30_000);
    await writer.stop();

    // Every refusal was a 503 in the documented shape; every acknowledged write is there.
    expect(writer.refusals.length).toBeGreaterThan(0);
    for (const refusal of writer.refusals) expect(refusal).toMatchObject({ status: 503, body: { code: 'DATABASE_UNAVAILABLE' } });
    for (const id of writer.acknowledged) expect((await api.get(`/api/employer/webhooks/${id}`)).status, id).toBe(200);
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
    expect((await fetch(`${service.url}/api/scim/v2/Users`, { headers: scimHeaders })).status).toBe(200);
    expect((await fetch(`${service.url}/test/fhir/Patient`)).status).toBe(200);

    // The projection runner, the job dispatcher and the worker resumed: a queued ping is delivered.
    const [last] = writer.acknowledged.slice(-1);
    expect((await api.post(`/api/employer/webhooks/${last}/ping`)).status).toBe(202);
    await waitUntil('the ping delivered after the outage', () => receiver.requests.some((request) => request.path === '/in'), 30_000);

    // The shared LISTEN connection (it wakes this process when other processes write) and the worker
    // lease (it tells other workers this one's attempts are alive) are back too.
    const admin = new pg.Client({ connectionString: postgres.connectionUri });
    await admin.connect();
    try {
      await waitUntil('the LISTEN connection and the worker lease back', async () => {
        const { rows } = await admin.query(`
          SELECT count(*) FILTER (WHERE a.application_name = 'employer-integrations listener')::int AS listeners,
                 count(*) FILTER (WHERE a.application_name = 'webhook-worker-lease' AND l.granted)::int AS leases
          FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory'
          WHERE a.datname = current_database()`);
        return rows[0].listeners === 1 && rows[0].leases === 1;
      }, 10_000);
    } finally {
      await admin.end();
    }
  }, 120_000); // up to 5 s to notice, 30 s to recover, on a loaded machine's restarts
});
