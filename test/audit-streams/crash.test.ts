// Across a SIGKILL of the worker: a stream's batch hangs on the receiver, the worker process (a real
// child process) is killed, a new worker starts. Every entry arrives, in chain order, none missing;
// the one duplicate is the batch that was in flight, sent again whole with the same batch id.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUri } from '../support/database.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { killWorkerProcess, startWorkerProcess } from '../support/worker-process.ts';
import { apiClient, waitUntil, webhookEnv } from '../webhooks/helpers.ts';
import { capabilitiesTrusting, chainOrderedEntryIds, entriesOf, makeAuditEntries } from './helpers.ts';

let receiver: HttpsReceiver;
let databaseUri: string;
let admin: pg.Client;
const services: TestService[] = [];
const env = webhookEnv({ AUDIT_STREAM_BATCH_MAX_ENTRIES: '3', AUDIT_STREAM_RETRY_BASE_MS: '100' });

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  databaseUri = await createTestDatabaseUri();
  admin = new pg.Client({ connectionString: databaseUri });
  await admin.connect();
});
afterAll(async () => {
  for (const service of services) await service.stop();
  await admin?.end();
  await receiver?.close();
});

describe('an audit stream across a SIGKILL of its worker', () => {
  it('delivers every entry, in order, with only the batch in flight sent twice', async () => {
    const api = await startTestService({ databaseUri, roles: ['api', 'projections'], env, capabilities: capabilitiesTrusting(receiver) });
    services.push(api);
    const tenant = await api.createTenant();
    const client = apiClient(api, tenant);
    await makeAuditEntries(api, tenant, 12);

    // The third batch hangs: the worker is killed while it is in flight.
    receiver.respondWith((_request, index) => (index === 2 ? { hang: true } : { status: 200 }));
    const worker = await startWorkerProcess(databaseUri, { ca: receiver.ca, env });
    const created = await client.post('/api/employer/audit-streams', { name: 'SIEM', preset: 'ndjson', url: `${receiver.url}/siem` });
    expect(created.status).toBe(201);
    await waitUntil('the third batch to reach the receiver', () => receiver.requests.length >= 3);
    const inFlight = await admin.query('SELECT delivered_seq::int, pending_through_seq::int, lease FROM audit_stream_cursors WHERE stream_id = $1', [created.body.id]);
    expect(inFlight.rows).toEqual([{ delivered_seq: expect.any(Number), pending_through_seq: expect.any(Number), lease: expect.any(Number) }]);

    await killWorkerProcess(worker, admin);
    receiver.respondWith(() => ({ status: 200 }));
    // Entries sealed while no worker runs are sent too.
    await makeAuditEntries(api, tenant, 3, 'while down');
    services.push(await startTestService({ databaseUri, roles: ['worker'], env, capabilities: capabilitiesTrusting(receiver) }));

    const expected = await chainOrderedEntryIds(databaseUri, tenant.employerId);
    await waitUntil('every entry to be acknowledged', async () => {
      const { body } = await client.get(`/api/employer/audit-streams/${created.body.id}`);
      return body.lag.entries === 0 && body.delivery.deliveredEntries === expected.length;
    }, 60_000);

    const requests = receiver.requests.filter((request) => request.path === '/siem');
    const batchIds = requests.map((request) => String(request.headers['x-audit-stream-batch-id']));
    // The hung batch, and only it, came twice: the same id, the same entries, one right after the other.
    expect(batchIds[3]).toBe(batchIds[2]);
    expect(entriesOf(requests[3]!)).toEqual(entriesOf(requests[2]!));
    expect(new Set(batchIds).size).toBe(batchIds.length - 1);
    // Dropping the repeated batch leaves every entry once, in chain order, none missing.
    const once = requests.filter((_request, index) => index !== 2).flatMap(entriesOf);
    expect(once.map((entry) => entry.id)).toEqual(expected);
    // The dead worker's job was freed, not left locked for 4 hours.
    await waitUntil('no locked job of the stream', async () => {
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1 AND locked_at IS NOT NULL`, [`audit_stream:${created.body.id}`]);
      return rows[0].n === 0;
    });
  }, 120_000); // three service starts, one of them a child process
});
