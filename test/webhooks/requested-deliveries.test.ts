// The limit of deliveries an employer asks for (WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT): queued
// pings and redeliveries count while queued or pending, the next is 429 TOO_MANY_DELIVERIES_IN_FLIGHT
// with Retry-After and changes nothing, and the allowance comes back when deliveries end.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookStream } from '../../src/webhooks/subscription.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil } from './helpers.ts';

const LIMIT = 2;

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;
beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver({
  env: { WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT: String(LIMIT) },
  respond: (request) => (request.path === '/stalled' ? { hang: true } : { status: 200 }),
})));
afterAll(() => stop?.());

describe('requested deliveries in flight', () => {
  it('refuses pings and redeliveries past the limit without changing anything, and admits again once deliveries end', async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const answering = await subscribe(api, `${receiver.url}/answering`);
    const stalled = await subscribe(api, `${receiver.url}/stalled`);
    const deliveries = async (webhookId: string) => (await api.get(`/api/employer/webhooks/${webhookId}/deliveries`)).body.deliveries as any[];

    expect((await api.post(`/api/employer/webhooks/${answering.id}/ping`)).status).toBe(202);
    const [delivered] = await waitUntil('the first ping to succeed', async () => {
      const log = await deliveries(answering.id);
      return log[0]?.status === 'succeeded' && log;
    });

    // Two pings that stay pending (their receiver never answers) take the allowance.
    for (let ping = 0; ping < LIMIT; ping++) expect((await api.post(`/api/employer/webhooks/${stalled.id}/ping`)).status).toBe(202);
    const refusedPing = await api.post(`/api/employer/webhooks/${answering.id}/ping`);
    expect(refusedPing).toMatchObject({ status: 429, body: { code: 'TOO_MANY_DELIVERIES_IN_FLIGHT', limit: LIMIT, retryAfterSeconds: expect.any(Number) } });
    const refusedRedelivery = await api.post(`/api/employer/webhooks/${answering.id}/deliveries/${delivered.id}/redeliver`);
    expect(refusedRedelivery).toMatchObject({ status: 429, body: { code: 'TOO_MANY_DELIVERIES_IN_FLIGHT' } });
    expect(await deliveries(answering.id)).toEqual([expect.objectContaining({ id: delivered.id, status: 'succeeded', attemptCount: 1 })]);
    const history = await service.ctx.eventStore.readStream(webhookStream(tenant.employerId, answering.id));
    expect(history.map((event) => event.type)).toEqual(['WebhookSubscriptionCreated', 'WebhookPingRequested']);

    // Deleting the stalled subscription cancels its pending deliveries: the allowance is back.
    expect((await api.delete(`/api/employer/webhooks/${stalled.id}`)).status).toBe(204);
    expect((await api.post(`/api/employer/webhooks/${answering.id}/deliveries/${delivered.id}/redeliver`)).status).toBe(202);
    await waitUntil('the redelivery', () => receiver.requests.filter((request) => request.path === '/answering').length === 2);
  });
});
