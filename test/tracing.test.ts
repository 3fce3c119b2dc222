// Tracing end to end: one API call whose event becomes a webhook delivery yields one trace, from the
// request through its command, append and projection batches to the worker's jobs and the webhook
// POST, exported over OTLP/HTTP to a receiver in this process; the webhook's receiver gets the
// `traceparent` of that POST's span. And without OTEL_EXPORTER_OTLP_ENDPOINT nothing starts.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTraceContext, inSpan, startTracing, tracingEnabled } from '../src/tracing.ts';
import { startMailCatcher, type MailCatcher } from './support/mail-catcher.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';
import { startServiceWithReceiver, type ServiceWithReceiver } from './support/service-with-receiver.ts';
import { webhookStream } from '../src/webhooks/subscription.ts';
import { apiClient, subscribe, waitUntil } from './webhooks/helpers.ts';

const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('starts no SDK: spans run their work directly and carry no trace context', async () => {
    expect(await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_SERVICE_NAME: 'x', OTEL_BSP_SCHEDULE_DELAY: 1 }, pino({ enabled: false }))).toBeNull();
    expect(tracingEnabled()).toBe(false);
    expect(await inSpan('work', {}, async (span) => ({ span, carried: currentTraceContext() }))).toEqual({ span: null, carried: {} });
  });
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  let otlp: OtlpReceiver;
  let mail: MailCatcher;
  let running: ServiceWithReceiver;

  beforeAll(async () => {
    otlp = await startOtlpReceiver();
    mail = await startMailCatcher();
    running = await startServiceWithReceiver({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'traced-service', OTEL_BSP_SCHEDULE_DELAY: '50', SMTP_URL: mail.smtpUrl },
      respond: (request) => (request.path === '/gone' ? { status: 410 } : { status: 200, body: 'ok' }),
    });
  });
  afterAll(async () => {
    await running?.stop();
    await mail?.close();
    await otlp?.close();
  });

  /** A fresh trace id and the `traceparent` of a caller's span in it. */
  const callerTrace = () => {
    const traceId = randomBytes(16).toString('hex');
    const spanId = randomBytes(8).toString('hex');
    return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
  };
  const named = (traceId: string, name: string) => otlp.spans.filter((span) => span.traceId === traceId && span.name === name);
  const only = (traceId: string, name: string): ReceivedSpan => {
    const spans = named(traceId, name);
    expect(spans, name).toHaveLength(1);
    return spans[0]!;
  };
  /** Polled, not slept on: the service exports every 50 ms. */
  const spansExported = (traceId: string, names: string[]) =>
    waitUntil(`spans ${names.join(', ')}`, () => names.every((name) => named(traceId, name).length > 0));
  const requestsTo = (path: string) => running.receiver.requests.filter((request) => request.path === path);

  it('follows one ping from the request to the webhook receiver in one trace', async () => {
    const { service } = running;
    const adminEmail = `traced-admin-${randomBytes(4).toString('hex')}@example.test`;
    const tenant = await service.createTenant({ adminEmail });
    const api = apiClient(service, tenant);
    const { id: webhookId, secret } = await subscribe(api, `${running.receiver.url}/traced`);

    // The caller's own trace: the request's span continues it.
    const { traceId, spanId: callerSpanId, traceparent } = callerTrace();
    // Its tracestate is its own free text: not kept in events, not passed on.
    const tracestate = 'caller=free-text';
    const response = await fetch(`${service.url}/api/employer/webhooks/${webhookId}/ping`, { method: 'POST', headers: { ...service.sessionHeaders(tenant.cookie), traceparent, tracestate } });
    expect(response.status).toBe(202);

    const [delivered] = await waitUntil('the ping at the receiver', () => requestsTo('/traced').length > 0 && requestsTo('/traced'));
    const pingRoute = 'POST /api/employer/webhooks/:webhookId/ping';
    await spansExported(traceId, [pingRoute, 'command', 'event-store append', 'projection job-dispatcher', 'job webhook_fan_out', 'webhook POST']);

    const request = only(traceId, pingRoute);
    expect(request).toMatchObject({ kind: SERVER, parentSpanId: callerSpanId, serviceName: 'traced-service' });
    expect(request.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/employer/webhooks/:webhookId/ping', 'http.response.status_code': 202 });
    const command = only(traceId, 'command');
    expect(command.parentSpanId).toBe(request.spanId);
    expect(only(traceId, 'event-store append').parentSpanId).toBe(command.spanId);
    // Every read model's batch of the ping's event continues the command whose event it applies.
    const batches = otlp.spans.filter((span) => span.traceId === traceId && span.name.startsWith('projection '));
    expect(batches.map((span) => span.name)).toContain('projection job-dispatcher');
    for (const batch of batches) expect(batch.parentSpanId, batch.name).toBe(command.spanId);
    // The fan-out job continues the event's context (from its metadata, through the job payload).
    const fanOut = only(traceId, 'job webhook_fan_out');
    expect(fanOut).toMatchObject({ kind: CONSUMER, parentSpanId: command.spanId });
    // It makes the event's first attempts itself (later ones are 'job webhook_deliver' spans of their own).
    const post = only(traceId, 'webhook POST');
    expect(post).toMatchObject({ kind: CLIENT, parentSpanId: fanOut.spanId });
    expect(post.attributes).toMatchObject({ 'http.response.status_code': 200, 'server.address': '127.0.0.1' });

    expect(delivered!.headers.traceparent).toBe(`00-${traceId}-${post.spanId}-01`);
    expect(delivered!.headers.tracestate).toBeUndefined();
    const [pinged] = (await service.ctx.eventStore.readStream(webhookStream(tenant.employerId, webhookId))).slice(-1);
    expect(pinged!.metadata).toMatchObject({ traceparent: `00-${traceId}-${command.spanId}-01` });
    expect(pinged!.metadata).not.toHaveProperty('tracestate');

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

  it('follows a disabling 410 to the administrators\' e-mail, and an export to its export.ready webhook', async () => {
    const { service } = running;
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const headers = { ...service.sessionHeaders(tenant.cookie) };

    // A receiver answering 410 Gone disables its subscription; the administrators get an e-mail.
    const gone = await subscribe(api, `${running.receiver.url}/gone`);
    const disabling = callerTrace();
    expect((await fetch(`${service.url}/api/employer/webhooks/${gone.id}/ping`, { method: 'POST', headers: { ...headers, traceparent: disabling.traceparent } })).status).toBe(202);
    await spansExported(disabling.traceId, ['job webhook_fan_out', 'job webhook-disabled-mail', 'smtp send']);
    expect(mail.mails.some((message) => message.subject?.includes('Webhook subscription disabled'))).toBe(true);
    const smtp = only(disabling.traceId, 'smtp send');
    const mailJob = only(disabling.traceId, 'job webhook-disabled-mail');
    expect(smtp).toMatchObject({ kind: CLIENT, parentSpanId: mailJob.spanId, attributes: { 'mail.recipients': 1 } });
    // The job continues the command that the attempt's outcome ran (its event disabled the subscription).
    const attempting = only(disabling.traceId, 'job webhook_fan_out');
    const outcome = named(disabling.traceId, 'command').find((span) => span.spanId === mailJob.parentSpanId);
    expect(outcome?.parentSpanId).toBe(attempting.spanId);

    // An export's run continues the request that started it, and so does its export.ready webhook.
    await subscribe(api, `${running.receiver.url}/exports`, { events: ['export.ready'] });
    const exporting = callerTrace();
    expect((await fetch(`${service.url}/api/employer/export/csv`, { method: 'POST', headers: { ...headers, traceparent: exporting.traceparent } })).status).toBe(202);
    const [ready] = await waitUntil('export.ready at the receiver', () => requestsTo('/exports').length > 0 && requestsTo('/exports'));
    await spansExported(exporting.traceId, ['POST /api/employer/export/csv', 'job export_run', 'webhook POST']);
    const kickOff = only(exporting.traceId, 'POST /api/employer/export/csv');
    expect(only(exporting.traceId, 'job export_run').parentSpanId).toBe(kickOff.spanId);
    expect(ready!.headers.traceparent).toBe(`00-${exporting.traceId}-${only(exporting.traceId, 'webhook POST').spanId}-01`);
  });
});
