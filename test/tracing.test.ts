// Tracing end to end: one API call whose event becomes a webhook delivery yields one trace, from the
// request through its command, append and projection batches to the worker's jobs and the webhook
// POST, exported over OTLP/HTTP to a receiver in this process; the webhook's receiver gets the
// `traceparent` of that POST's span. And without OTEL_EXPORTER_OTLP_ENDPOINT nothing starts.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTraceContext, inSpan, startTracing, tracingEnabled } from '../src/tracing.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';
import { startServiceWithReceiver, type ServiceWithReceiver } from './support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil } from './webhooks/helpers.ts';

const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('starts no SDK: spans run their work directly and carry no trace context', async () => {
    expect(await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_SERVICE_NAME: 'x', OTEL_BSP_SCHEDULE_DELAY: 1 })).toBeNull();
    expect(tracingEnabled()).toBe(false);
    expect(await inSpan('work', {}, async (span) => ({ span, carried: currentTraceContext() }))).toEqual({ span: null, carried: {} });
  });
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let otlp: OtlpReceiver;
  let running: ServiceWithReceiver;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    running = await startServiceWithReceiver({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'traced-service', OTEL_BSP_SCHEDULE_DELAY: '50' } });
  });
  afterAll(async () => {
    await running?.stop();
    await otlp?.close();
  });

  it('follows one ping from the request to the webhook receiver in one trace', async () => {
    const { service, receiver } = running;
    const adminEmail = `traced-admin-${randomBytes(4).toString('hex')}@example.test`;
    const tenant = await service.createTenant({ adminEmail });
    const api = apiClient(service, tenant);
    const { id: webhookId, secret } = await subscribe(api, `${receiver.url}/traced`);

    // The caller's own trace: the request's span continues it.
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const response = await fetch(`${service.url}/api/employer/webhooks/${webhookId}/ping`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), traceparent: `00-${traceId}-${callerSpanId}-01` },
    });
    expect(response.status).toBe(202);

    const [delivered] = await waitUntil('the ping at the receiver', () => receiver.requests.filter((request) => request.path === '/traced').length > 0 && receiver.requests.filter((request) => request.path === '/traced'));
    const inTrace = () => otlp.spans.filter((span) => span.traceId === traceId);
    const named = (name: string) => inTrace().filter((span) => span.name === name);
    // Polled, not slept on: the service exports every 50 ms.
    await waitUntil('the webhook spans exported', () => named('webhook POST').length === 1 && named('job webhook_deliver').length === 1);
    const only = (name: string): ReceivedSpan => {
      const spans = named(name);
      expect(spans, name).toHaveLength(1);
      return spans[0]!;
    };

    const request = only('POST /api/employer/webhooks/:webhookId/ping');
    expect(request).toMatchObject({ kind: SERVER, parentSpanId: callerSpanId, serviceName: 'traced-service' });
    expect(request.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/employer/webhooks/:webhookId/ping', 'http.response.status_code': 202 });
    const command = only('command');
    expect(command.parentSpanId).toBe(request.spanId);
    expect(only('event-store append').parentSpanId).toBe(command.spanId);
    // Every read model's batch of the ping's event continues the command whose event it applies.
    const dispatcherBatch = only('projection job-dispatcher');
    expect(dispatcherBatch.parentSpanId).toBe(command.spanId);
    // The fan-out job continues the event's context (from its metadata, through the job payload).
    const fanOut = only('job webhook_fan_out');
    expect(fanOut).toMatchObject({ kind: CONSUMER, parentSpanId: command.spanId });
    const deliver = only('job webhook_deliver');
    expect(deliver).toMatchObject({ kind: CONSUMER, parentSpanId: fanOut.spanId });
    const post = only('webhook POST');
    expect(post).toMatchObject({ kind: CLIENT, parentSpanId: deliver.spanId });
    expect(post.attributes).toMatchObject({ 'http.response.status_code': 200, 'server.address': '127.0.0.1' });

    expect(delivered!.headers.traceparent).toBe(`00-${traceId}-${post.spanId}-01`);

    // A request with a JSON body (the subscription's creation) runs its command in its span too: the
    // body, read from the connection's events, does not lose the request's context.
    const creation = otlp.spans.find((span) => span.name === 'POST /api/employer/webhooks');
    expect(creation).toBeDefined();
    expect(otlp.spans.filter((span) => span.name === 'command' && span.parentSpanId === creation!.spanId && span.traceId === creation!.traceId)).toHaveLength(1);

    // No span says who the administrator is, nor any secret or credential.
    const cookieValue = tenant.cookie.split('=').slice(1).join('=');
    for (const span of otlp.spans) {
      const text = JSON.stringify(span.attributes);
      expect(text).not.toContain(adminEmail);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(cookieValue);
    }
  });
});
