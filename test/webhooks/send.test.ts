import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import type { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSafeDispatcher } from '../../src/net/safe-target.ts';
import { parseRetryAfter, RESPONSE_BODY_LIMIT_CHARS, sendWebhookAttempt } from '../../src/webhooks/send.ts';
import { buildWebhookRequest, generateSigningSecret } from '../../src/webhooks/signing.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';

let receiver: HttpsReceiver;
let dispatcher: Agent;
const secret = generateSigningSecret();

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  dispatcher = createSafeDispatcher({ allowPrivateNetworks: true, ca: receiver.ca });
});
afterAll(async () => {
  await dispatcher.close();
  await receiver.close();
});
afterEach(() => {
  receiver.requests.length = 0;
  receiver.respondWith(() => ({ status: 200, body: 'ok' }));
});

function signedDelivery(deliveryId = crypto.randomUUID()) {
  return buildWebhookRequest({
    deliveryId,
    eventType: 'invoice.paid',
    timestamp: '2026-03-01T10:15:00.000Z',
    apiVersion: '2026-02-01',
    employerId: 'emp_123',
    data: { invoiceId: 'inv_9', amount: 1250 },
    secret,
  });
}

const send = (path = '/hook', timeoutMs?: number) => sendWebhookAttempt({ url: `${receiver.url}${path}`, ...signedDelivery(), dispatcher, timeoutMs });

describe('sendWebhookAttempt', () => {
  it('delivers a request that independent receiver libraries verify', async () => {
    receiver.respondWith(() => ({ status: 204 }));
    const delivery = signedDelivery();
    const result = await sendWebhookAttempt({ url: `${receiver.url}/hooks/in`, ...delivery, dispatcher });

    expect(result).toMatchObject({ ok: true, statusCode: 204, error: null, responseBody: '', retryAfterMs: null, gone: false });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(receiver.requests).toHaveLength(1);
    const [received] = receiver.requests;
    expect(received).toMatchObject({ method: 'POST', path: '/hooks/in', body: delivery.body });
    expect(received!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-webhook-id': delivery.headers['x-webhook-id'],
      'x-webhook-event': 'invoice.paid',
      'x-webhook-version': '2026-02-01',
      'x-webhook-timestamp': '2026-03-01T10:15:00.000Z',
    });
    expect(received!.headers['user-agent']).toMatch(/^employer-integrations-webhooks\//);

    // What a receiver does with what arrived on the wire.
    expect(await verify(secret, received!.body, String(received!.headers['x-webhook-signature']))).toBe(true);
    const standardHeaders = {
      'webhook-id': String(received!.headers['webhook-id']),
      'webhook-timestamp': String(received!.headers['webhook-timestamp']),
      'webhook-signature': String(received!.headers['webhook-signature']),
    };
    expect(new Webhook(secret).verify(received!.body, standardHeaders)).toMatchObject({ event: 'invoice.paid', employerId: 'emp_123' });
  });

  it('reports a non-2xx answer as a failed attempt with its status and body', async () => {
    receiver.respondWith(() => ({ status: 500, body: 'database is down' }));
    expect(await send()).toMatchObject({ ok: false, statusCode: 500, responseBody: 'database is down', error: null, gone: false, retryAfterMs: null });
  });

  it('does not follow redirects', async () => {
    receiver.respondWith((request) => (request.path === '/moved' ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } } : { status: 200 }));
    expect(await send('/moved')).toMatchObject({ ok: false, statusCode: 302 });
    expect(receiver.requests.map((request) => request.path)).toEqual(['/moved']);
  });

  it('flags 410 Gone', async () => {
    receiver.respondWith(() => ({ status: 410 }));
    expect(await send()).toMatchObject({ ok: false, statusCode: 410, gone: true });
  });

  it('reads Retry-After on 429 and 503, in seconds or as an HTTP date', async () => {
    receiver.respondWith(() => ({ status: 429, headers: { 'retry-after': '120' } }));
    expect(await send()).toMatchObject({ ok: false, statusCode: 429, retryAfterMs: 120_000 });

    const inOneHour = new Date(Date.now() + 3600_000).toUTCString();
    receiver.respondWith(() => ({ status: 503, headers: { 'retry-after': inOneHour } }));
    const result = await send();
    expect(result).toMatchObject({ ok: false, statusCode: 503 });
    expect(result.retryAfterMs).toBeGreaterThan(3000_000);
    expect(result.retryAfterMs).toBeLessThanOrEqual(3600_000);

    receiver.respondWith(() => ({ status: 500, headers: { 'retry-after': '120' } }));
    expect(await send()).toMatchObject({ statusCode: 500, retryAfterMs: null });
  });

  it('gives up on a receiver that never answers', async () => {
    receiver.respondWith(() => ({ hang: true }));
    const result = await send('/hook', 200);
    expect(result).toMatchObject({ ok: false, statusCode: null, error: 'timed out after 200 ms', responseBody: '' });
    expect(receiver.requests).toHaveLength(1);
  });

  it('also times out a response whose body never ends', async () => {
    receiver.respondWith(() => ({ status: 200, headers: { 'content-length': '100' }, body: 'partial' }));
    expect(await send('/hook', 200)).toMatchObject({ ok: false, statusCode: null, error: 'timed out after 200 ms' });
  });

  it(`keeps at most ${RESPONSE_BODY_LIMIT_CHARS} characters of the response body`, async () => {
    receiver.respondWith(() => ({ status: 400, body: 'é'.repeat(50_000) }));
    const result = await send();
    expect(result).toMatchObject({ ok: false, statusCode: 400 });
    expect(result.responseBody).toBe('é'.repeat(RESPONSE_BODY_LIMIT_CHARS));
  });

  it('returns network errors instead of throwing', async () => {
    const closed = await startHttpsReceiver();
    await closed.close();
    const result = await sendWebhookAttempt({ url: closed.url, ...signedDelivery(), dispatcher });
    expect(result).toMatchObject({ ok: false, statusCode: null });
    expect(result.error).toContain('ECONNREFUSED');
  });

  it('returns TLS errors for an untrusted certificate', async () => {
    const untrusting = createSafeDispatcher({ allowPrivateNetworks: true });
    const result = await sendWebhookAttempt({ url: receiver.url, ...signedDelivery(), dispatcher: untrusting });
    await untrusting.close();
    expect(result).toMatchObject({ ok: false, statusCode: null });
    expect(result.error).toMatch(/certificate/i);
    expect(receiver.requests).toHaveLength(0);
  });

  // undici hands a finished keep-alive socket back to the pool one event-loop turn after the
  // response ends (it waits to see whether the server closes it). Deliveries issued later than that
  // share one socket; deliveries issued back-to-back in the same turn alternate between two.
  it('reuses one pooled TLS connection for deliveries to the same receiver', async () => {
    const fresh = createSafeDispatcher({ allowPrivateNetworks: true, ca: receiver.ca });
    for (let i = 0; i < 3; i += 1) {
      expect(await sendWebhookAttempt({ url: `${receiver.url}/hook`, ...signedDelivery(), dispatcher: fresh })).toMatchObject({ ok: true });
      await new Promise(setImmediate);
    }
    await fresh.close();
    const connectionIds = receiver.requests.map((request) => request.connectionId);
    expect(connectionIds).toHaveLength(3);
    expect(connectionIds[0]).toBeGreaterThan(0);
    expect(new Set(connectionIds).size).toBe(1);
  });

  it('does not open a connection per delivery even when sends follow each other immediately', async () => {
    const fresh = createSafeDispatcher({ allowPrivateNetworks: true, ca: receiver.ca });
    for (let i = 0; i < 10; i += 1) {
      expect(await sendWebhookAttempt({ url: `${receiver.url}/hook`, ...signedDelivery(), dispatcher: fresh })).toMatchObject({ ok: true });
    }
    await fresh.close();
    expect(new Set(receiver.requests.map((request) => request.connectionId)).size).toBeLessThanOrEqual(2);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-03-01T10:00:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 30 ', now)).toBe(30_000);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 10:02:00 GMT', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 09:00:00 GMT', now)).toBe(0);
    // The obsolete forms that RFC 9110 still asks recipients to accept.
    expect(parseRetryAfter('Sunday, 01-Mar-26 10:02:00 GMT', now)).toBe(120_000);
    expect(parseRetryAfter('Sun Mar  1 10:02:00 2026', now)).toBe(120_000);
  });

  it('ignores anything else', () => {
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
    expect(parseRetryAfter('1.5', now)).toBeNull();
  });
});
