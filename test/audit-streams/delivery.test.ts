// Audit streams on the real service, to a real HTTPS receiver: every entry once, in chain order, per
// preset in its vendor's request shape; signatures checked by libraries nobody here wrote; a failing
// destination retried with the same batch while the lag shows; refusal of non-https and private
// targets; pause and resume.
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, waitUntil, webhookEnv, type ApiClient } from '../webhooks/helpers.ts';
import { capabilitiesTrusting, chainOrderedEntryIds, entriesOf, makeAuditEntries } from './helpers.ts';

let receiver: HttpsReceiver;
let service: TestService;
/** Every line the service logged (at debug), and every credential the tests gave or got: none may meet. */
const logLines: string[] = [];
const credentials: string[] = [];

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  service = await startTestService({ env: webhookEnv({ AUDIT_STREAM_BATCH_MAX_ENTRIES: '10', AUDIT_STREAM_RETRY_BASE_MS: '200', LOG_LEVEL: 'debug' }), capabilities: capabilitiesTrusting(receiver), logDestination: { write: (line: string) => void logLines.push(line) } });
});
afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

const requestsWith = (header: string, value: string) => receiver.requests.filter((request) => request.headers[header] === value);
const ndjsonRequests = (path: string) => receiver.requests.filter((request) => request.path === path);

async function tenantClient() {
  const tenant = await service.createTenant();
  return { tenant, client: apiClient(service, tenant) };
}

async function createStream(client: ApiClient, body: Record<string, unknown>) {
  const created = await client.post('/api/employer/audit-streams', body);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  credentials.push(...[created.body.signingSecret, body.token].filter((value): value is string => typeof value === 'string'));
  return created.body;
}

/** Waits until the stream has nothing left to send, then answers its view. */
async function caughtUp(client: ApiClient, streamId: string) {
  return waitUntil('the stream to catch up', async () => {
    const { body } = await client.get(`/api/employer/audit-streams/${streamId}`);
    return body.lag.entries === 0 && body.delivery.deliveredEntries > 0 && body;
  });
}

describe('an ndjson audit stream', () => {
  it('delivers every entry once, in chain order, signed like webhooks, and what comes later too', async () => {
    const { tenant, client } = await tenantClient();
    await makeAuditEntries(service, tenant, 12);
    const stream = await createStream(client, { name: 'SIEM', preset: 'ndjson', url: `${receiver.url}/ndjson-1` });
    expect(stream).toMatchObject({ preset: 'ndjson', status: 'active', signingSecret: expect.stringMatching(/^whsec_/) });

    await caughtUp(client, stream.id);
    const before = (await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId)).length;
    await makeAuditEntries(service, tenant, 5, 'later');
    const expected = await waitUntil('the later entries to be in the chain', async () => {
      const ids = await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId);
      return ids.length === before + 5 && ids;
    });
    const view = await waitUntil('the later entries to arrive', async () => {
      const { body } = await client.get(`/api/employer/audit-streams/${stream.id}`);
      return body.lag.entries === 0 && body.delivery.deliveredEntries === expected.length && body;
    });

    const requests = ndjsonRequests('/ndjson-1');
    const received = requests.flatMap(entriesOf);
    expect(received.map((entry) => entry.id)).toEqual(expected);
    expect(received.map((entry) => entry.chain.seq)).toEqual([...received.map((entry) => entry.chain.seq)].sort((a, b) => a - b));
    expect(new Set(received.map((entry) => entry.id)).size).toBe(received.length);
    expect(received.every((entry) => entry.employerId === tenant.employerId)).toBe(true);
    expect(received.find((entry) => entry.action === 'audit_stream.create')).toMatchObject({ target: { type: 'audit_stream', id: stream.id } });
    // Batches of at most AUDIT_STREAM_BATCH_MAX_ENTRIES.
    expect(Math.max(...requests.map((request) => entriesOf(request).length))).toBeLessThanOrEqual(10);
    // The audit API shows the same entries.
    const listed = await client.get('/api/employer/audit-events?limit=100');
    expect(new Set(listed.body.entries.map((entry: { id: string }) => entry.id))).toEqual(new Set(expected));

    for (const request of requests) {
      expect(request.method).toBe('POST');
      expect(request.headers['content-type']).toBe('application/x-ndjson');
      expect(request.headers['x-audit-stream-batch-id']).toBe(request.headers['webhook-id']);
      expect(await verify(stream.signingSecret, request.body, String(request.headers['x-webhook-signature']))).toBe(true);
      const signedAt = new Date(Number(request.headers['webhook-timestamp']) * 1000);
      expect(new Webhook(stream.signingSecret).sign(String(request.headers['webhook-id']), signedAt, request.body)).toBe(request.headers['webhook-signature']);
    }
    expect(view).toMatchObject({ lag: { entries: 0, seconds: 0 }, delivery: { consecutiveFailures: 0, lastError: null } });
    // The secret is never shown again.
    expect(JSON.stringify((await client.get('/api/employer/audit-streams')).body)).not.toContain(stream.signingSecret);
  });

  it('keeps a failing batch, shows the lag, and sends the same batch again once the destination answers', async () => {
    const { tenant, client } = await tenantClient();
    await makeAuditEntries(service, tenant, 2);
    receiver.respondWith((request) => (request.path === '/ndjson-failing' ? { status: 503, body: 'maintenance' } : { status: 200 }));
    const stream = await createStream(client, { name: 'failing', preset: 'ndjson', url: `${receiver.url}/ndjson-failing` });
    const failing = await waitUntil('two failed attempts', async () => {
      const { body } = await client.get(`/api/employer/audit-streams/${stream.id}`);
      return body.delivery.consecutiveFailures >= 2 && body;
    });
    const waiting = (await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId)).length;
    expect(failing).toMatchObject({
      lag: { entries: waiting, seconds: expect.any(Number) },
      delivery: { deliveredEntries: 0, lastStatusCode: 503, lastError: 'HTTP 503: maintenance', nextAttemptAt: expect.any(String) },
    });

    receiver.respondWith(() => ({ status: 200 }));
    const done = await caughtUp(client, stream.id);
    expect(done.delivery).toMatchObject({ deliveredEntries: waiting, consecutiveFailures: 0, lastError: null });
    const attempts = ndjsonRequests('/ndjson-failing');
    expect(attempts.length).toBeGreaterThanOrEqual(3);
    // Every attempt of the failing batch, up to its success, was the same batch: same id, same entries
    // (only the signing time moves). Entries sealed meanwhile follow in later batches.
    const batchId = attempts[0]!.headers['x-audit-stream-batch-id'];
    const firstBatch = attempts.filter((request) => request.headers['x-audit-stream-batch-id'] === batchId);
    expect(firstBatch.length).toBeGreaterThanOrEqual(3);
    expect(new Set(firstBatch.map((request) => request.body)).size).toBe(1);
    expect(attempts.slice(0, firstBatch.length)).toEqual(firstBatch);
    expect(attempts.flatMap(entriesOf).map((entry) => entry.id).filter((id, index, ids) => ids.indexOf(id) === index))
      .toEqual(await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId));
  });

  it('sends nothing while paused and resumes where it stopped; start latest skips the history', async () => {
    const { tenant, client } = await tenantClient();
    await makeAuditEntries(service, tenant, 2);
    const stream = await createStream(client, { name: 'from now', preset: 'ndjson', url: `${receiver.url}/ndjson-latest`, start: 'latest' });
    await caughtUp(client, stream.id); // its own creation entry
    expect(ndjsonRequests('/ndjson-latest').flatMap(entriesOf).map((entry) => entry.action)).toEqual(['audit_stream.create']);

    expect((await client.patch(`/api/employer/audit-streams/${stream.id}`, { status: 'paused' })).body).toMatchObject({ status: 'paused' });
    await makeAuditEntries(service, tenant, 2, 'while paused');
    const paused = await waitUntil('the lag to show the paused entries', async () => {
      const { body } = await client.get(`/api/employer/audit-streams/${stream.id}`);
      return body.lag.entries >= 3 && body; // audit_stream.pause and two keys
    });
    expect(paused.status).toBe('paused');
    expect(ndjsonRequests('/ndjson-latest')).toHaveLength(1);

    await client.patch(`/api/employer/audit-streams/${stream.id}`, { status: 'active' });
    await waitUntil('the paused entries to arrive', async () => {
      const actions = ndjsonRequests('/ndjson-latest').flatMap(entriesOf).map((entry) => entry.action);
      return actions.at(-1) === 'audit_stream.resume' && actions;
    });
    const received = ndjsonRequests('/ndjson-latest').flatMap(entriesOf).map((entry) => entry.id);
    const chain = await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId);
    // From its creation on, nothing of the history before: create, pause, two keys, resume.
    expect(received).toEqual(chain.slice(chain.indexOf(received[0]!)));
    expect(received).toHaveLength(5);
  });
});

describe('the vendor presets', () => {
  const onlyOne = async (requests: () => ReceivedRequest[]) => waitUntil('a batch', () => requests().length > 0 && requests());

  it("Splunk HEC: POST /services/collector/event, Authorization: Splunk <token>, concatenated event objects", async () => {
    const { tenant, client } = await tenantClient();
    await makeAuditEntries(service, tenant, 2);
    const stream = await createStream(client, { name: 'Splunk', preset: 'splunk_hec', url: `${receiver.url}/ignored/path`, token: 'splunk-token-1' });
    expect(stream.signingSecret).toBeNull();
    await caughtUp(client, stream.id);
    const [request] = await onlyOne(() => requestsWith('authorization', 'Splunk splunk-token-1'));
    expect(request).toMatchObject({ method: 'POST', path: '/services/collector/event', headers: { 'content-type': 'application/json' } });
    const events = request!.body.split('\n').map((line) => JSON.parse(line));
    const chain = await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId);
    expect(events).toHaveLength(chain.length);
    for (const event of events) {
      expect(Object.keys(event).sort()).toEqual(['event', 'host', 'source', 'sourcetype', 'time']);
      expect(event).toMatchObject({ host: '127.0.0.1', source: 'employer-integrations', sourcetype: '_json', time: Date.parse(event.event.occurredAt) / 1000 });
    }
    expect(events.map((event) => event.event.id)).toEqual(chain);

    // A new token: the next batch carries it; it is never shown.
    credentials.push('splunk-token-2');
    await client.patch(`/api/employer/audit-streams/${stream.id}`, { token: 'splunk-token-2' });
    await onlyOne(() => requestsWith('authorization', 'Splunk splunk-token-2'));
    expect(JSON.stringify((await client.get(`/api/employer/audit-streams/${stream.id}`)).body)).not.toContain('splunk-token');
  });

  it('Datadog logs: POST /api/v2/logs, DD-API-KEY, a JSON array of { ddsource, ddtags, hostname, service, message }', async () => {
    const { tenant, client } = await tenantClient();
    await makeAuditEntries(service, tenant, 1);
    const stream = await createStream(client, { name: 'Datadog', preset: 'datadog', url: receiver.url, token: 'dd-key-1' });
    await caughtUp(client, stream.id);
    const [request] = await onlyOne(() => requestsWith('dd-api-key', 'dd-key-1'));
    expect(request).toMatchObject({ method: 'POST', path: '/api/v2/logs', headers: { 'content-type': 'application/json' } });
    const items = JSON.parse(request!.body) as Array<Record<string, string>>;
    expect(items).toHaveLength((await chainOrderedEntryIds(service.ctx.db.connectionUri, tenant.employerId)).length);
    for (const item of items) {
      expect(Object.keys(item).sort()).toEqual(['ddsource', 'ddtags', 'hostname', 'message', 'service']);
      const entry = JSON.parse(item.message!);
      expect(item).toMatchObject({ ddsource: 'employer-integrations', service: 'employer-integrations', hostname: '127.0.0.1', ddtags: `employer_id:${tenant.employerId},action:${entry.action}` });
      expect(entry.chain).toMatchObject({ seq: expect.any(Number), hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    }
  });

  it('needs a token for the vendors and takes none for ndjson', async () => {
    const { client } = await tenantClient();
    expect(await client.post('/api/employer/audit-streams', { name: 'x', preset: 'datadog', url: receiver.url })).toMatchObject({ status: 400, body: { code: 'TOKEN_REQUIRED' } });
    expect(await client.post('/api/employer/audit-streams', { name: 'x', preset: 'ndjson', url: receiver.url, token: 'abc' })).toMatchObject({ status: 400, body: { code: 'SECRET_NOT_SETTABLE' } });
  });
});

describe('destinations', () => {
  it('refuses a non-https URL and, without WEBHOOK_ALLOW_PRIVATE_NETWORKS, a private address', async () => {
    const { client } = await tenantClient();
    const http = await client.post('/api/employer/audit-streams', { name: 'x', preset: 'ndjson', url: receiver.url.replace('https:', 'http:') });
    expect(http).toMatchObject({ status: 400, body: { code: 'INVALID_AUDIT_STREAM_URL', message: 'url must use https, not http' } });

    const strict = await startTestService({ databaseUri: service.ctx.db.connectionUri, roles: ['api'], env: webhookEnv({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }) });
    try {
      const tenant = await strict.createTenant();
      const strictClient = apiClient(strict, tenant);
      for (const url of [receiver.url, 'https://10.0.0.8/in', 'https://[::1]/in', 'https://169.254.169.254/latest']) {
        expect(await strictClient.post('/api/employer/audit-streams', { name: 'x', preset: 'ndjson', url })).toMatchObject({
          status: 400, body: { code: 'INVALID_AUDIT_STREAM_URL', message: expect.stringContaining('target not allowed') },
        });
      }
      expect((await strictClient.get('/api/employer/audit-streams')).body).toEqual({ streams: [] });
    } finally {
      await strict.stop();
    }
  });
});

describe('deleting a stream', () => {
  it('removes it and its cursor', async () => {
    const { client } = await tenantClient();
    const stream = await createStream(client, { name: 'short-lived', preset: 'ndjson', url: `${receiver.url}/ndjson-deleted` });
    await caughtUp(client, stream.id);
    expect((await client.delete(`/api/employer/audit-streams/${stream.id}`)).status).toBe(204);
    expect((await client.get(`/api/employer/audit-streams/${stream.id}`)).status).toBe(404);
    await waitUntil('the cursor to be removed', async () => {
      const rows = await service.ctx.db.pg.query('SELECT 1 FROM audit_stream_cursors WHERE stream_id = $1', [stream.id]);
      return rows.rowCount === 0;
    });
    expect((await client.get('/api/employer/audit-streams')).body).toEqual({ streams: [] });
  });
});

describe('the logs', () => {
  it('hold no signing secret or destination token', () => {
    expect(logLines.some((line) => line.includes('audit stream batch failed'))).toBe(true);
    expect(credentials.length).toBeGreaterThan(3);
    for (const credential of credentials) expect(logLines.filter((line) => line.includes(credential))).toEqual([]);
  });
});
