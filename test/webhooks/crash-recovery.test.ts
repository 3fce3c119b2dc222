// At-least-once across a crash: a worker process killed (SIGKILL) while its attempt hangs on the
// receiver; after a worker starts again, the same delivery is attempted again with the same
// x-webhook-id and completes. The worker runs as a real child process so it can really be killed.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabaseUri } from '../support/database.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { killWorkerProcess, startWorkerProcess } from '../support/worker-process.ts';
import { apiClient, capabilitiesTrusting, subscribe, waitUntil, webhookEnv } from './helpers.ts';

let receiver: HttpsReceiver;
let databaseUri: string;
let admin: pg.Client;
const services: TestService[] = [];

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

describe('a worker process killed mid-delivery', () => {
  it('delivers again after restart, with the same x-webhook-id', async () => {
    const api = await startTestService({ databaseUri, roles: ['api', 'projections'], env: webhookEnv(), capabilities: capabilitiesTrusting(receiver) });
    services.push(api);
    const client = apiClient(api, await api.createTenant());
    const { id } = await subscribe(client, `${receiver.url}/crash`);

    const worker = await startWorkerProcess(databaseUri, { ca: receiver.ca });
    receiver.respondWith(() => ({ hang: true }));
    await client.post(`/api/employer/webhooks/${id}/ping`);
    const [interrupted] = await waitUntil('the attempt to reach the receiver', () => receiver.requests.length >= 1 && receiver.requests);
    const inFlight = await admin.query('SELECT delivery_id, attempts, attempt_lease FROM webhook_deliveries WHERE webhook_id = $1', [id]);
    expect(inFlight.rows).toEqual([{ delivery_id: interrupted!.headers['x-webhook-id'], attempts: 0, attempt_lease: expect.any(Number) }]);

    await killWorkerProcess(worker, admin);

    receiver.respondWith(() => ({ status: 200, body: 'ok' }));
    services.push(await startTestService({ databaseUri, roles: ['worker'], env: webhookEnv(), capabilities: capabilitiesTrusting(receiver) }));
    const [, retried] = await waitUntil('the delivery to arrive again', () => receiver.requests.length >= 2 && receiver.requests);
    expect(retried!.headers['x-webhook-id']).toBe(interrupted!.headers['x-webhook-id']);
    expect(retried!.body).toBe(interrupted!.body);

    const [delivery] = await waitUntil('the delivery to succeed', async () => {
      const { body } = await client.get(`/api/employer/webhooks/${id}/deliveries`);
      return body.deliveries[0]?.status === 'succeeded' && body.deliveries;
    });
    expect(delivery.attempts).toMatchObject([{ attempt: 1, statusCode: 200 }]);
    // The dead worker's job was released and has run; nothing is left locked for 4 hours.
    await waitUntil('the job to be gone', async () => {
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1`, [`webhook_delivery:${delivery.id}`]);
      return rows[0].n === 0;
    });
    expect(receiver.requests).toHaveLength(2);
  }, 90_000); // three service starts, one of them a child process
});
