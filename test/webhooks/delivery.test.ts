// Delivery end to end: committed events through the job dispatcher and graphile-worker to a real
// HTTPS receiver, verified by receiver libraries nobody here wrote.
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Capability } from '../../src/capability.ts';
import type { RecordedEvent } from '../../src/event-store/port.ts';
import { eventSchema } from '../../src/event-store/schemas.ts';
import { webhookEventMappings } from '../../src/webhooks/event-types.ts';
import { DIRECT_ATTEMPTS_MAX } from '../../src/webhooks/tasks.ts';
import type { HttpsReceiver, ReceivedRequest } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil, type ApiClient } from './helpers.ts';

// A broadcast event for these tests: a stand-in for a future capability's domain event (say
// InvoicePaid -> invoice.paid), appended through the real event store.
/** The made-up domain event these tests turn into invoice.paid webhooks. */
const invoiceEvents: Capability = { name: 'test-invoices', events: [eventSchema('TestInvoicePaid', z.object({ invoiceId: z.string() }))] };

const testMappings = {
  ...webhookEventMappings,
  TestInvoicePaid: { webhookEvent: 'invoice.paid', data: (event: RecordedEvent) => ({ invoiceId: event.data.invoiceId }) },
} as const;

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;

beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver({ eventMappings: testMappings, extraCapabilities: [invoiceEvents] })));
afterAll(() => stop?.());
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
    metadata: { tenantId: employerId, actor: { type: 'system', id: 'test' }, correlationId: crypto.randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
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

describe('fan-out', () => {
  it('makes the first attempts of up to DIRECT_ATTEMPTS_MAX deliveries itself, without a job each, and gives the rest a job: every one delivered once', async () => {
    // Every delivery job ever added, by its key (graphile-worker removes a job once it has run).
    await service.ctx.db.pg.query(`
      CREATE TABLE IF NOT EXISTS test_delivery_job_keys (key text NOT NULL);
      CREATE OR REPLACE FUNCTION test_record_delivery_job_key() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.key LIKE 'webhook_delivery:%' THEN INSERT INTO test_delivery_job_keys VALUES (NEW.key); END IF;
        RETURN NEW;
      END $$;
      CREATE OR REPLACE TRIGGER test_record_delivery_job_key AFTER INSERT OR UPDATE OF key ON graphile_worker._private_jobs
        FOR EACH ROW WHEN (NEW.key IS NOT NULL) EXECUTE FUNCTION test_record_delivery_job_key();`);
    const { tenant, api } = await tenantWithApi();
    const subscriptions = DIRECT_ATTEMPTS_MAX + 2;
    const ids: string[] = [];
    for (let i = 0; i < subscriptions; i++) ids.push((await subscribe(api, `${receiver.url}/fan-out/${i}`, { events: ['invoice.paid'] })).id);
    await appendInvoicePaid(tenant.employerId, 'inv_fan_out');

    await waitUntil('every subscription to receive the event', () => ids.every((_, i) => requestsTo(`/fan-out/${i}`).length >= 1));
    const deliveries = await waitUntil('every delivery to succeed', async () => {
      const { rows } = await service.ctx.db.pg.query(
        `SELECT delivery_id::text, status, attempts FROM webhook_deliveries WHERE webhook_id = ANY($1) ORDER BY webhook_id`, [ids]);
      return rows.length === subscriptions && rows.every((row) => row.status === 'succeeded') && rows;
    });
    expect(deliveries.every((row) => row.attempts === 1)).toBe(true);
    for (let i = 0; i < subscriptions; i++) expect(requestsTo(`/fan-out/${i}`)).toHaveLength(1);
    const { rows: attempts } = await service.ctx.db.pg.query(
      `SELECT count(*)::int AS n FROM webhook_delivery_attempts WHERE delivery_id = ANY($1::uuid[]) AND attempt = 1 AND status_code = 200`, [deliveries.map((row) => row.delivery_id)]);
    expect(attempts[0].n).toBe(subscriptions); // each attempt in the delivery log
    const { rows: jobs } = await service.ctx.db.pg.query(
      `SELECT count(DISTINCT key)::int AS n FROM test_delivery_job_keys WHERE key = ANY($1)`, [deliveries.map((row) => `webhook_delivery:${row.delivery_id}`)]);
    expect(jobs[0].n).toBe(subscriptions - DIRECT_ATTEMPTS_MAX);
  });
});

describe('retries', () => {
  it('retries a failing target with the same delivery id until it answers 2xx', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/flaky`);
    receiver.respondWith((request) => (requestsTo('/flaky').length <= 2 ? { status: 500, body: 'not yet' } : { status: 204 }));
    await api.post(`/api/employer/webhooks/${id}/ping`);

    const requests = await waitForRequests('/flaky', 3);
    expect(new Set(requests.map((request) => header(request, 'x-webhook-id'))).size).toBe(1);
    expect(new Set(requests.map((request) => request.body)).size).toBe(1); // the same bytes every time

    const [delivery] = await waitUntil('the delivery to succeed', async () => {
      const deliveries = await deliveriesOf(api, id);
      return deliveries[0]?.status === 'succeeded' && deliveries;
    });
    expect(delivery.attempts.map((attempt: any) => [attempt.attempt, attempt.statusCode, attempt.responseBody])).toEqual([[1, 500, 'not yet'], [2, 500, 'not yet'], [3, 204, '']]);
    expect(delivery.attempts[0].nextRetryAt).toEqual(expect.any(String));
    expect(delivery.attempts[2].nextRetryAt).toBeNull();
    expect((await api.get(`/api/employer/webhooks/${id}`)).body).toMatchObject({ failureCount: 0, status: 'active', lastDelivery: { id: delivery.id, status: 'succeeded', statusCode: 204 } });
  });

  it('counts exhausted deliveries, disables the subscription at maxFailures, and PATCH re-enables it', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/down`, { maxFailures: 2 });
    receiver.respondWith((request) => (request.path === '/down' ? { status: 503, body: 'down' } : { status: 200 }));

    await api.post(`/api/employer/webhooks/${id}/ping`);
    await waitForRequests('/down', 6); // 1 attempt + 5 retries
    const afterFirst = await waitUntil('failureCount 1', async () => {
      const webhook = (await api.get(`/api/employer/webhooks/${id}`)).body;
      return webhook.failureCount === 1 && webhook;
    });
    expect(afterFirst).toMatchObject({ status: 'active', disabledReason: null });
    // The subscription's count is recorded before the log entry that ends the attempt (tasks.ts), so
    // the delivery may show its last attempt a moment after failureCount moves.
    const [exhausted] = await waitUntil('the delivery to fail', async () => {
      const deliveries = await deliveriesOf(api, id);
      return deliveries[0]?.status === 'failed' && deliveries;
    });
    expect(exhausted).toMatchObject({ status: 'failed', attemptCount: 6 });

    await api.post(`/api/employer/webhooks/${id}/ping`);
    const disabled = await waitUntil('auto-disable', async () => {
      const webhook = (await api.get(`/api/employer/webhooks/${id}`)).body;
      return webhook.status === 'inactive' && webhook;
    });
    expect(disabled).toMatchObject({ failureCount: 2, disabledReason: 'failure_threshold' });
    expect(requestsTo('/down')).toHaveLength(12);
    // The audit log is a read model of its own: it may record the deactivation a moment after the webhooks model shows it.
    const audit = await waitUntil('the deactivation audited', async () => {
      const rows = await service.ctx.db.pg.query(`SELECT action, actor_type, details FROM audit_log WHERE target_id = $1 ORDER BY global_position`, [id]);
      return rows.rows.length >= 4 && rows;
    });
    expect(audit.rows.map((row) => row.action)).toEqual(['webhook.create', 'webhook.ping', 'webhook.ping', 'webhook.deactivate']);
    expect(audit.rows[3]).toMatchObject({ actor_type: 'system', details: { reason: 'failure_threshold' } });

    // Disabled: no new deliveries, and pings are refused.
    expect((await api.post(`/api/employer/webhooks/${id}/ping`)).status).toBe(400);

    receiver.respondWith(() => ({ status: 200 }));
    const enabled = await api.patch(`/api/employer/webhooks/${id}`, { status: 'active' });
    expect(enabled.body).toMatchObject({ status: 'active', failureCount: 0, disabledReason: null });
    await api.post(`/api/employer/webhooks/${id}/ping`);
    await waitForRequests('/down', 13);
  });

  it('honours Retry-After on 429', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/busy`);
    receiver.respondWith(() => (requestsTo('/busy').length === 1 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 }));
    await api.post(`/api/employer/webhooks/${id}/ping`);
    await waitForRequests('/busy', 2);
    const [delivery] = await deliveriesOf(api, id);
    const [first] = delivery.attempts;
    expect(Date.parse(first.nextRetryAt) - Date.parse(first.requestedAt)).toBeGreaterThanOrEqual(3000);
  });

  it('disables the subscription at once when the target answers 410 Gone', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/gone`);
    receiver.respondWith(() => ({ status: 410 }));
    await api.post(`/api/employer/webhooks/${id}/ping`);
    const webhook = await waitUntil('the subscription to stop', async () => {
      const body = (await api.get(`/api/employer/webhooks/${id}`)).body;
      return body.status === 'inactive' && body;
    });
    expect(webhook.disabledReason).toBe('gone');
    await waitUntil('the delivery to fail', async () => (await deliveriesOf(api, id))[0]?.status === 'failed');
    expect((await deliveriesOf(api, id))[0]).toMatchObject({ status: 'failed', attemptCount: 1 });
    expect(requestsTo('/gone')).toHaveLength(1);
  });
});

describe('stopping and redelivering', () => {
  it('stops pending retries when the subscription is deleted', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/deleted`);
    // The retry would come in an hour.
    receiver.respondWith(() => ({ status: 503, headers: { 'retry-after': '3600' } }));
    await api.post(`/api/employer/webhooks/${id}/ping`);
    await waitForRequests('/deleted', 1);
    const [pending] = await waitUntil('the first attempt to be logged', async () => {
      const deliveries = await deliveriesOf(api, id);
      return deliveries[0]?.attemptCount === 1 && deliveries;
    });
    expect(pending.status).toBe('pending');
    expect((await api.delete(`/api/employer/webhooks/${id}`)).status).toBe(204);
    expect((await api.get(`/api/employer/webhooks/${id}`)).status).toBe(404);

    const row = await service.ctx.db.pg.query('SELECT status FROM webhook_deliveries WHERE delivery_id = $1', [pending.id]);
    expect(row.rows[0].status).toBe('cancelled');
    // Make the retry's job due now: it finds the delivery cancelled and sends nothing.
    await service.ctx.db.pg.query(
      `SELECT graphile_worker.reschedule_jobs(array_agg(id), run_at => now()) FROM graphile_worker.jobs WHERE key = $1`,
      [`webhook_delivery:${pending.id}`],
    );
    await waitUntil('the retry job to finish', async () => {
      const jobs = await service.ctx.db.pg.query(`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1`, [`webhook_delivery:${pending.id}`]);
      return jobs.rows[0].n === 0;
    });
    expect(requestsTo('/deleted')).toHaveLength(1);
  });

  it('redelivers a finished delivery with the same id', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/again`);
    await api.post(`/api/employer/webhooks/${id}/ping`);
    const [first] = await waitForRequests('/again', 1);
    const [delivery] = await waitUntil('the delivery to succeed', async () => {
      const deliveries = await deliveriesOf(api, id);
      return deliveries[0]?.status === 'succeeded' && deliveries;
    });
    expect((await api.post(`/api/employer/webhooks/${id}/deliveries/${delivery.id}/redeliver`)).status).toBe(202);
    const [, second] = await waitForRequests('/again', 2);
    expect(header(second!, 'x-webhook-id')).toBe(header(first!, 'x-webhook-id'));
    expect(second!.body).toBe(first!.body);
    const [after] = await waitUntil('the redelivery to be logged', async () => {
      const deliveries = await deliveriesOf(api, id);
      return deliveries[0]?.attemptCount === 2 && deliveries[0].status === 'succeeded' && deliveries;
    });
    expect(after.attempts.map((attempt: any) => attempt.attempt)).toEqual([1, 2]);

    expect((await api.post(`/api/employer/webhooks/${id}/deliveries/${crypto.randomUUID()}/redeliver`)).status).toBe(404);
    expect((await api.post(`/api/employer/webhooks/${id}/deliveries/not-a-uuid/redeliver`)).status).toBe(404);
  });

  it('signs with the new secret alone after a rotation without overlap', async () => {
    const { api } = await tenantWithApi();
    const { id, secret } = await subscribe(api, `${receiver.url}/rotated`);
    const rotated = await api.post(`/api/employer/webhooks/${id}/rotate-secret`, { overlapSeconds: 0 });
    expect(rotated.status).toBe(200);
    expect(rotated.body.signingSecret).toMatch(/^whsec_/);
    expect(rotated.body.signingSecret).not.toBe(secret);
    await api.post(`/api/employer/webhooks/${id}/ping`);
    const [received] = await waitForRequests('/rotated', 1);
    expect(await verify(rotated.body.signingSecret, received!.body, header(received!, 'x-webhook-signature'))).toBe(true);
    expect(await verify(secret, received!.body, header(received!, 'x-webhook-signature'))).toBe(false);
  });
});

describe('tenant isolation', () => {
  it('delivers an event only to subscriptions of the tenant that owns it', async () => {
    const a = await tenantWithApi();
    const b = await tenantWithApi();
    await subscribe(a.api, `${receiver.url}/tenant-a`, { events: ['invoice.paid'] });
    await subscribe(b.api, `${receiver.url}/tenant-b`, { events: ['invoice.paid'] });
    await subscribe(a.api, `${receiver.url}/tenant-a-other`, { events: ['cohort.uploaded'] });

    await appendInvoicePaid(a.tenant.employerId, 'inv-a1');
    await appendInvoicePaid(b.tenant.employerId, 'inv-b1');
    const [toA] = await waitForRequests('/tenant-a', 1);
    const [toB] = await waitForRequests('/tenant-b', 1);
    expect(JSON.parse(toA!.body)).toMatchObject({ event: 'invoice.paid', employerId: a.tenant.employerId, data: { invoiceId: 'inv-a1' } });
    expect(JSON.parse(toB!.body)).toMatchObject({ event: 'invoice.paid', employerId: b.tenant.employerId, data: { invoiceId: 'inv-b1' } });

    // Once both deliveries are in the log, nothing else was created for these events.
    const rows = await service.ctx.db.pg.query(
      `SELECT d.employer_id, d.data->>'invoiceId' AS invoice FROM webhook_deliveries d WHERE d.event_type = 'invoice.paid' AND d.employer_id = ANY($1) ORDER BY invoice`,
      [[a.tenant.employerId, b.tenant.employerId]],
    );
    expect(rows.rows).toEqual([{ employer_id: a.tenant.employerId, invoice: 'inv-a1' }, { employer_id: b.tenant.employerId, invoice: 'inv-b1' }]);
    expect(requestsTo('/tenant-a')).toHaveLength(1);
    expect(requestsTo('/tenant-b')).toHaveLength(1);
    expect(requestsTo('/tenant-a-other')).toHaveLength(0);
  });
});
