// After a receiver outage: 100 deliveries fail for good and disable the subscription (the
// administrators get an e-mail at a real SMTP server); once the receiver is back, one recovery sends
// every one of them again, each once, in their order, one at a time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Capability } from '../../src/capability.ts';
import type { RecordedEvent } from '../../src/event-store/port.ts';
import { eventSchema } from '../../src/event-store/schemas.ts';
import { webhookEventMappings } from '../../src/webhooks/event-types.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil } from './helpers.ts';

const invoiceEvents: Capability = { name: 'test-invoices', events: [eventSchema('TestInvoicePaid', z.object({ invoiceId: z.string() }))] };
const testMappings = {
  ...webhookEventMappings,
  TestInvoicePaid: { webhookEvent: 'invoice.paid', data: (event: RecordedEvent) => ({ invoiceId: event.data.invoiceId }) },
} as const;

const DELIVERIES = 100;

let receiver: HttpsReceiver;
let service: TestService;
let mail: MailCatcher;
let stop: () => Promise<void>;

beforeAll(async () => {
  mail = await startMailCatcher();
  ({ service, receiver, stop } = await startServiceWithReceiver({ eventMappings: testMappings, extraCapabilities: [invoiceEvents], env: { SMTP_URL: mail.smtpUrl } }));
});
afterAll(async () => {
  await stop?.();
  await mail?.close();
});

describe('recovery after a receiver outage', () => {
  it('sends each of 100 failed deliveries once, in order, one at a time, after the auto-disable e-mail', async () => {
    const adminEmail = `admin-${crypto.randomUUID()}@example.test`;
    const tenant = await service.createTenant({ adminEmail });
    const api = apiClient(service, tenant);
    const path = '/outage';
    const { id } = await subscribe(api, `${receiver.url}${path}`, { events: ['invoice.paid'], maxFailures: DELIVERIES });
    const since = new Date().toISOString();

    receiver.respondWith(() => ({ status: 503, body: 'down for maintenance' }));
    for (let invoice = 0; invoice < DELIVERIES; invoice++) {
      await service.ctx.eventStore.appendToStream(`tenant-${tenant.employerId}.invoice-inv${invoice}`, [{ type: 'TestInvoicePaid', data: { invoiceId: `inv${invoice}` } }], {
        expectedRevision: 'no_stream',
        metadata: { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' }, correlationId: crypto.randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
      });
    }
    const disabled = await waitUntil('the subscription disabled by its failures', async () => {
      const webhook = (await api.get(`/api/employer/webhooks/${id}`)).body;
      return webhook.status === 'inactive' && webhook;
    }, 120_000);
    expect(disabled).toMatchObject({ disabledReason: 'failure_threshold', failureCount: DELIVERIES, disabledAt: expect.any(String) });

    const notice = await waitUntil('the auto-disable e-mail', () => mail.mails.find((message) => message.subject?.includes(path)));
    expect(notice.to).toMatchObject({ value: [{ address: adminEmail }] });
    expect(notice.text).toContain(`The webhook subscription ${id}`);
    expect(notice.text).toContain('failureCount reached maxFailures');
    expect(notice.text).toContain(`/api/employer/webhooks/${id}/recover`);

    const failed = await api.get(`/api/employer/webhooks/${id}/deliveries?status=failed&limit=100`);
    expect(failed.body.deliveries).toHaveLength(DELIVERIES);
    const expectedOrder = (failed.body.deliveries as any[]).map((delivery) => delivery.id).reverse(); // the log is newest first

    // The receiver is back; it counts how many deliveries it holds at once.
    const before = receiver.requests.length;
    let inFlight = 0;
    let mostAtOnce = 0;
    receiver.respondWith(async () => {
      inFlight += 1;
      mostAtOnce = Math.max(mostAtOnce, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight -= 1;
      return { status: 200, body: 'ok' };
    });
    expect((await api.post(`/api/employer/webhooks/${id}/recover`, { since })).body.code).toBe('WEBHOOK_INACTIVE');
    expect((await api.patch(`/api/employer/webhooks/${id}`, { status: 'active' })).status).toBe(200);

    const started = await api.post(`/api/employer/webhooks/${id}/recover`, { since });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ total: DELIVERIES, since });
    // Nothing is taken twice: a repeated request finds no failed delivery left.
    expect((await api.post(`/api/employer/webhooks/${id}/recover`, { since })).body).toMatchObject({ total: 0 });

    const done = await waitUntil('the recovery to finish', async () => {
      const progress = (await api.get(`/api/employer/webhooks/${id}/recoveries/${started.body.recoveryId}`)).body;
      return progress.succeeded === DELIVERIES && progress;
    }, 120_000);
    expect(done).toMatchObject({ total: DELIVERIES, failed: 0, pending: 0, cancelled: 0 });

    const resent = receiver.requests.slice(before).filter((request) => request.path === path).map((request) => String(request.headers['x-webhook-id']));
    expect(resent).toEqual(expectedOrder);
    expect(mostAtOnce).toBe(1);
    const log = await api.get(`/api/employer/webhooks/${id}/deliveries?recoveryId=${started.body.recoveryId}&limit=100`);
    expect(log.body.deliveries).toHaveLength(DELIVERIES);
    expect((log.body.deliveries as any[]).every((delivery) => delivery.status === 'succeeded' && delivery.recoveryId === started.body.recoveryId)).toBe(true);
  }, 240_000);
});
