// The management routes and the direct test endpoint, against a real HTTPS receiver.
import { verify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe } from './helpers.ts';

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;

beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver()));
afterAll(() => stop?.());

async function tenantWithApi() {
  const tenant = await service.createTenant();
  return { tenant, api: apiClient(service, tenant) };
}

describe('subscriptions', () => {
  it('creates a subscription and shows its secret only once', async () => {
    const { api } = await tenantWithApi();
    const created = await api.post('/api/employer/webhooks', { url: `${receiver.url}/in`, events: ['cohort.uploaded', 'export.ready', 'cohort.uploaded'], description: 'ops' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^whk_[0-9a-f]{32}$/),
      url: `${receiver.url}/in`,
      events: ['cohort.uploaded', 'export.ready'],
      description: 'ops',
      status: 'active',
      failureCount: 0,
      maxFailures: 10,
      createdAt: expect.any(String),
      lastDelivery: null,
    });
    expect(Buffer.from(created.body.signingSecret.slice('whsec_'.length), 'base64').length).toBeGreaterThanOrEqual(24);

    const read = await api.get(`/api/employer/webhooks/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('signingSecret');
    expect(JSON.stringify(read.body)).not.toContain(created.body.signingSecret);
    const list = await api.get('/api/employer/webhooks');
    expect(list.body.webhooks.map((webhook: any) => webhook.id)).toEqual([created.body.id]);
    expect(list.body.availableEvents).toContain('invoice.paid');

    // Stored sealed, not in clear, in the read model and in the event history.
    const stored = await service.ctx.db.pg.query(
      `SELECT (SELECT sealed_secret FROM webhook_subscriptions WHERE id = $1) AS sealed, (SELECT string_agg(data::text, '') FROM events WHERE stream_name LIKE '%' || $1) AS history`,
      [created.body.id],
    );
    expect(stored.rows[0].sealed).toMatch(/^v1\./);
    expect(stored.rows[0].history).not.toContain(created.body.signingSecret.slice('whsec_'.length));
  });

  it('refuses unknown event types, naming them', async () => {
    const { api } = await tenantWithApi();
    const response = await api.post('/api/employer/webhooks', { url: `${receiver.url}/in`, events: ['test.ping', 'invoice.refunded', 'nope'] });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'UNKNOWN_WEBHOOK_EVENT', unknownEvents: ['invoice.refunded', 'nope'] });
    expect(response.body.message).toContain('invoice.refunded, nope');
    expect((await api.post('/api/employer/webhooks', { url: `${receiver.url}/in`, events: [] })).status).toBe(400);
  });

  it('refuses http URLs', async () => {
    const { api } = await tenantWithApi();
    const response = await api.post('/api/employer/webhooks', { url: 'http://hooks.example.com/in', events: ['test.ping'] });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'INVALID_WEBHOOK_URL', message: expect.stringContaining('https') });
  });

  it('changes a subscription with PATCH and records every change in the audit log', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/a`);
    const patched = await api.patch(`/api/employer/webhooks/${id}`, { url: `${receiver.url}/b`, events: ['export.ready'], description: 'new', maxFailures: 3 });
    expect(patched.body).toMatchObject({ url: `${receiver.url}/b`, events: ['export.ready'], description: 'new', maxFailures: 3, status: 'active' });
    expect((await api.patch(`/api/employer/webhooks/${id}`, { status: 'inactive' })).body).toMatchObject({ status: 'inactive', disabledReason: 'manual' });
    expect((await api.patch(`/api/employer/webhooks/${id}`, { events: ['bogus'] })).status).toBe(400);
    expect((await api.patch(`/api/employer/webhooks/${id}`, {})).status).toBe(400);
    expect((await api.delete(`/api/employer/webhooks/${id}`)).status).toBe(204);
    expect((await api.delete(`/api/employer/webhooks/${id}`)).status).toBe(404);

    const audit = await service.ctx.db.pg.query(`SELECT action, actor_type FROM audit_log WHERE target_id = $1 ORDER BY global_position`, [id]);
    expect(audit.rows).toEqual([
      { action: 'webhook.create', actor_type: 'user' },
      { action: 'webhook.update', actor_type: 'user' },
      { action: 'webhook.deactivate', actor_type: 'user' },
      { action: 'webhook.delete', actor_type: 'user' },
    ]);
  });

  it("answers 404 for another employer's subscription on every route", async () => {
    const a = await tenantWithApi();
    const b = await tenantWithApi();
    const { id } = await subscribe(a.api, `${receiver.url}/a-only`);
    const responses = [
      await b.api.get(`/api/employer/webhooks/${id}`),
      await b.api.patch(`/api/employer/webhooks/${id}`, { status: 'inactive' }),
      await b.api.post(`/api/employer/webhooks/${id}/test`),
      await b.api.post(`/api/employer/webhooks/${id}/ping`),
      await b.api.post(`/api/employer/webhooks/${id}/rotate-secret`),
      await b.api.get(`/api/employer/webhooks/${id}/deliveries`),
      await b.api.delete(`/api/employer/webhooks/${id}`),
    ];
    expect(responses.map((response) => response.status)).toEqual([404, 404, 404, 404, 404, 404, 404]);
    expect((await b.api.get('/api/employer/webhooks')).body.webhooks).toEqual([]);
    expect((await a.api.get(`/api/employer/webhooks/${id}`)).body.status).toBe('active');
    expect(receiver.requests.filter((request) => request.path === '/a-only')).toHaveLength(0);
  });

  it('accepts an API key with webhook:manage and refuses one without it', async () => {
    const { tenant } = await tenantWithApi();
    const manager = await createApiKey(service, tenant, { scopes: ['webhook:manage'] });
    const reader = await createApiKey(service, tenant, { scopes: ['export:read'] });
    const withKey = apiClient(service, { headers: keyHeaders(manager.rawKey) });
    const created = await withKey.post('/api/employer/webhooks', { url: `${receiver.url}/by-key`, events: ['test.ping'] });
    expect(created.status).toBe(201);
    expect((await withKey.post(`/api/employer/webhooks/${created.body.id}/test`)).body.success).toBe(true);

    const refused = await apiClient(service, { headers: keyHeaders(reader.rawKey) }).get('/api/employer/webhooks');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'INSUFFICIENT_SCOPE', requiredScopes: ['webhook:manage'] });
    const audit = await service.ctx.db.pg.query(`SELECT actor_type, actor_id FROM audit_log WHERE target_id = $1`, [created.body.id]);
    expect(audit.rows).toEqual([{ actor_type: 'apiKey', actor_id: manager.id }]);
  });
});

describe('POST /api/employer/webhooks/{webhookId}/test', () => {
  it('sends a signed test.ping directly and reports the answer', async () => {
    const { tenant, api } = await tenantWithApi();
    const { id, secret } = await subscribe(api, `${receiver.url}/test-ok`);
    receiver.respondWith(() => ({ status: 202, body: 'thanks' }));
    const response = await api.post(`/api/employer/webhooks/${id}/test`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ success: true, statusCode: 202, latencyMs: expect.any(Number), error: null, deliveryId: expect.any(String) });

    const received = receiver.requests.filter((request) => request.path === '/test-ok');
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!.body)).toMatchObject({ id: response.body.deliveryId, event: 'test.ping', employerId: tenant.employerId, data: { webhookId: id } });
    expect(await verify(secret, received[0]!.body, String(received[0]!.headers['x-webhook-signature']))).toBe(true);

    const log = await api.get(`/api/employer/webhooks/${id}/deliveries`);
    expect(log.body.deliveries).toEqual([
      expect.objectContaining({ id: response.body.deliveryId, trigger: 'test', event: 'test.ping', status: 'succeeded', attemptCount: 1, eventId: null }),
    ]);
    expect(log.body.deliveries[0].attempts[0]).toMatchObject({ statusCode: 202, responseBody: 'thanks' });
  });

  it('answers 200 with success false for a non-2xx answer, and logs it', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/test-500`);
    receiver.respondWith(() => ({ status: 500, body: 'boom' }));
    const response = await api.post(`/api/employer/webhooks/${id}/test`);
    receiver.respondWith(() => ({ status: 200 }));
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: false, statusCode: 500, error: null });
    const [delivery] = (await api.get(`/api/employer/webhooks/${id}/deliveries?status=failed`)).body.deliveries;
    expect(delivery).toMatchObject({ id: response.body.deliveryId, status: 'failed' });
    expect(delivery.attempts[0]).toMatchObject({ statusCode: 500, responseBody: 'boom' });
  });

  it('answers 200 with success false when the target cannot be reached', async () => {
    const { api } = await tenantWithApi();
    const closed = await startHttpsReceiver();
    await closed.close();
    const { id } = await subscribe(api, `${closed.url}/nobody`);
    const response = await api.post(`/api/employer/webhooks/${id}/test`);
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ success: false, statusCode: null, error: expect.stringContaining('ECONNREFUSED') });
    expect((await api.get(`/api/employer/webhooks/${id}/deliveries`)).body.deliveries).toHaveLength(1);
  });

  it('answers 404 for an unknown subscription and 400 for an inactive one', async () => {
    const { api } = await tenantWithApi();
    expect((await api.post('/api/employer/webhooks/whk_00000000000000000000000000000000/test')).status).toBe(404);
    const { id } = await subscribe(api, `${receiver.url}/test-inactive`);
    await api.patch(`/api/employer/webhooks/${id}`, { status: 'inactive' });
    const response = await api.post(`/api/employer/webhooks/${id}/test`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'WEBHOOK_INACTIVE' });
    expect(receiver.requests.filter((request) => request.path === '/test-inactive')).toHaveLength(0);
  });
});

describe('delivery log', () => {
  it('pages newest first and filters by status and event', async () => {
    const { api } = await tenantWithApi();
    const { id } = await subscribe(api, `${receiver.url}/log`);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      receiver.respondWith(() => ({ status: i % 2 === 0 ? 200 : 500 }));
      ids.push((await api.post(`/api/employer/webhooks/${id}/test`)).body.deliveryId);
    }
    receiver.respondWith(() => ({ status: 200 }));
    const first = await api.get(`/api/employer/webhooks/${id}/deliveries?limit=2`);
    const second = await api.get(`/api/employer/webhooks/${id}/deliveries?limit=2&cursor=${first.body.nextCursor}`);
    const third = await api.get(`/api/employer/webhooks/${id}/deliveries?limit=2&cursor=${second.body.nextCursor}`);
    const paged = [...first.body.deliveries, ...second.body.deliveries, ...third.body.deliveries].map((delivery: any) => delivery.id);
    expect(paged).toEqual([...ids].reverse());
    expect(third.body.nextCursor).toBeNull();

    const failed = await api.get(`/api/employer/webhooks/${id}/deliveries?status=failed`);
    expect(failed.body.deliveries.map((delivery: any) => delivery.id)).toEqual([ids[3], ids[1]]);
    expect((await api.get(`/api/employer/webhooks/${id}/deliveries?event=invoice.paid`)).body.deliveries).toEqual([]);
    expect((await api.get(`/api/employer/webhooks/${id}/deliveries?cursor=garbage`)).status).toBe(400);
  });
});
