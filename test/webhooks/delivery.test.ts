// Delivery end to end: committed events through the job dispatcher and graphile-worker to a real
// HTTPS receiver, verified by receiver libraries nobody here wrote.
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/event-store/port.ts';
import { webhookEventMappings } from '../../src/webhooks/event-types.ts';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, capabilitiesTrusting, subscribe, waitUntil, webhookEnv, type ApiClient } from './helpers.ts';

// A broadcast event for these tests: a stand-in for a future capability's domain event (say
// InvoicePaid -> invoice.paid), appended through the real event store.
const testMappings = {
  ...webhookEventMappings,
  TestInvoicePaid: { webhookEvent: 'invoice.paid', data: (event: RecordedEvent) => ({ invoiceId: event.data.invoiceId }) },
} as const;

let receiver: HttpsReceiver;
let service: TestService;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  service = await startTestService({ env: webhookEnv(), capabilities: capabilitiesTrusting(receiver, testMappings) });
});
afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});
afterEach(() => receiver.respondWith(() => ({ status: 200, body: 'ok' })));

const requestsTo = (path: string) => receiver.requests.filter((request) => request.path === path);
const waitForRequests = (path: string, count: number) => waitUntil(`${count} request(s) to ${path}`, () => requestsTo(path).length >= count && requestsTo(path));
const header = (request: ReceivedRequest, name: string) => String(request.headers[name]);

async function tenantWithApi() {
  const tenant = await service.createTenant();
  return { tenant, api: apiClient(service, tenant) };
}

async function deliveriesOf(api: ApiClient, webhookId: string, query = '') {
  const page = await api.get(`/api/employer/webhooks/${webhookId}/deliveries${query}`);
  expect(page.status).toBe(200);
  return page.body.deliveries as any[];
}

async function appendInvoicePaid(employerId: string, invoiceId: string) {
  await service.ctx.eventStore.appendToStream(`tenant-${employerId}.invoice-${invoiceId}`, [{ type: 'TestInvoicePaid', data: { invoiceId } }], {
    expectedRevision: 'no_stream',
    metadata: { tenantId: employerId, actor: { type: 'system', id: 'test' }, correlationId: crypto.randomUUID(), causationId: null, schemaVersion: 1, occurredAt: new Date().toISOString() },
  });
}

describe('queued delivery', () => {
  it('delivers a committed event signed for GitHub-style and Standard Webhooks receivers', async () => {
    const { tenant, api } = await tenantWithApi();
    const { id, secret } = await subscribe(api, `${receiver.url}/signed`);
    expect((await api.post(`/api/employer/webhooks/${id}/ping`)).status).toBe(202);

    const [received] = await waitForRequests('/signed', 1);
    expect(received!.headers).toMatchObject({ 'content-type': 'application/json', 'x-webhook-event': 'test.ping', 'x-webhook-version': '2026-02-01' });
    expect(header(received!, 'user-agent')).toMatch(/^employer-integrations-webhooks\//);
    const body = JSON.parse(received!.body);
    expect(body).toEqual({
      id: header(received!, 'x-webhook-id'),
      event: 'test.ping',
      timestamp: header(received!, 'x-webhook-timestamp'),
      apiVersion: '2026-02-01',
      employerId: tenant.employerId,
      data: { webhookId: id, message: expect.any(String) },
    });
    expect(await verify(secret, received!.body, header(received!, 'x-webhook-signature'))).toBe(true);
    const standard = { 'webhook-id': header(received!, 'webhook-id'), 'webhook-timestamp': header(received!, 'webhook-timestamp'), 'webhook-signature': header(received!, 'webhook-signature') };
    expect(new Webhook(secret).verify(received!.body, standard)).toMatchObject({ event: 'test.ping', employerId: tenant.employerId });

    const [delivery] = await waitUntil('the delivery to succeed', async () => {
      const deliveries = await deliveriesOf(api, id);
      return deliveries[0]?.status === 'succeeded' && deliveries;
    });
    expect(delivery).toMatchObject({ id: body.id, event: 'test.ping', trigger: 'event', status: 'succeeded', attemptCount: 1, nextAttemptAt: null });
    expect(delivery.attempts).toEqual([
      { attempt: 1, requestedAt: expect.any(String), latencyMs: expect.any(Number), statusCode: 200, error: null, responseBody: 'ok', nextRetryAt: null },
    ]);
  });
});
