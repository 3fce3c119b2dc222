// Idempotency-Key on the creating POSTs (routes declared `idempotent: true`), against the real routes
// and one test route whose handler waits until the test lets it finish.
import { createHash } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import type { Capability } from '../../src/capability.ts';
import { defineRoute } from '../../src/http/route.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { webhookEnv, waitUntil } from '../webhooks/helpers.ts';

/** POST /probe/gated: counts its runs and answers only once the test opens the gate. */
const gate = {
  runs: 0,
  open: () => {},
  opened: Promise.resolve(),
  close() {
    this.opened = new Promise<void>((resolve) => (this.open = resolve));
  },
};
const gatedCapability: Capability = {
  name: 'gated-probe',
  routes: [
    async (fastify, { ctx }) => {
      defineRoute(fastify, ctx, {
        method: 'POST',
        url: '/probe/gated',
        summary: 'Test route: an idempotent create that waits for the test',
        tags: ['Test'],
        auth: { modes: ['session'] },
        body: z.object({ n: z.number() }),
        idempotent: true,
        responses: { 201: { description: 'Created' } },
        handler: async ({ body, reply }) => {
          gate.runs += 1;
          const run = gate.runs;
          await gate.opened;
          reply.status(201).header('location', `/probe/gated/${run}`);
          return { n: body.n, run };
        },
      });
    },
  ],
};

let service: TestService;
let tenant: Awaited<ReturnType<TestService['createTenant']>>;

beforeAll(async () => {
  service = await startTestService({ env: webhookEnv(), capabilities: [...capabilities, gatedCapability] });
  tenant = await service.createTenant();
});
afterAll(async () => service?.stop());

type Answer = { status: number; headers: Headers; body: any };

async function post(path: string, body: unknown, options: { key?: string; cookie?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const response = await fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: {
      ...(options.headers ?? service.sessionHeaders(options.cookie ?? tenant.cookie)),
      'content-type': 'application/json',
      ...(options.key === undefined ? {} : { 'idempotency-key': options.key }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : JSON.parse(text) };
}

const newKey = () => `retry-${crypto.randomUUID()}`;
const count = (table: 'events' | 'api_keys' | 'webhook_subscriptions' | 'idempotency_keys') =>
  service.ctx.db.slonik.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM ${sql.identifier([table])}`);
const webhookBody = (path = 'hook') => ({ url: `https://127.0.0.1:9/${path}`, events: ['test.ping'] });

describe('Idempotency-Key', () => {
  it('replays the first response (status, body, headers) for the same key and body, and writes nothing more', async () => {
    const key = newKey();
    const body = { name: 'Payroll', scopes: ['cohort:read', 'export:read'] };
    const first = await post('/api/employer/api-keys', body, { key });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const [events, keys] = [await count('events'), await count('api_keys')];

    // The same fields in another order are the same request.
    const retry = await post('/api/employer/api-keys', JSON.stringify({ scopes: body.scopes, name: body.name }), { key });
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.body.rawKey).toMatch(/^mt_live_[0-9a-f]{64}$/);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.headers.get('cache-control')).toBe('no-store');
    expect([await count('events'), await count('api_keys')]).toEqual([events, keys]);

    // Without the header, the same body creates another key.
    const unkeyed = await post('/api/employer/api-keys', body);
    expect(unkeyed.status).toBe(201);
    expect(unkeyed.body.id).not.toBe(first.body.id);
  });

  it('answers 422 IDEMPOTENCY_KEY_REUSED for the same key with another body, and writes nothing', async () => {
    const key = newKey();
    expect((await post('/api/employer/webhooks', webhookBody('first'), { key })).status).toBe(201);
    const [events, webhooks] = [await count('events'), await count('webhook_subscriptions')];
    const reused = await post('/api/employer/webhooks', webhookBody('second'), { key });
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', message: expect.any(String), requestId: expect.any(String) });
    // On another creating route too: the key names one request, whatever the route.
    expect((await post('/api/employer/api-keys', { name: 'k', scopes: ['cohort:read'] }, { key })).status).toBe(422);
    expect([await count('events'), await count('webhook_subscriptions')]).toEqual([events, webhooks]);
  });

  it('keeps the keys of different employers apart', async () => {
    const other = await service.createTenant();
    const key = newKey();
    const mine = await post('/api/employer/webhooks', webhookBody(), { key });
    const theirs = await post('/api/employer/webhooks', webhookBody(), { key, cookie: other.cookie });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.signingSecret).not.toBe(mine.body.signingSecret);
  });

  it("never hands one caller's response to another caller of the same employer (422)", async () => {
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['webhook:manage'] });
    const key = newKey();
    expect((await post('/api/employer/webhooks', webhookBody(), { key })).status).toBe(201);
    const byApiKey = await post('/api/employer/webhooks', webhookBody(), { key, headers: keyHeaders(rawKey) });
    expect(byApiKey.status).toBe(422);
    expect(byApiKey.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(byApiKey.body).not.toHaveProperty('signingSecret');
  });

  it('forgets a key 24 hours after its first request: the same request then runs again', async () => {
    const key = newKey();
    const first = await post('/api/employer/webhooks', webhookBody(), { key });
    const keyHash = createHash('sha256').update(key).digest('hex');
    const lifetime = await service.ctx.db.slonik.oneFirst(sql.type(z.object({ hours: z.number() }))`
      SELECT extract(epoch FROM expires_at - created_at)::float8 / 3600 AS hours FROM idempotency_keys WHERE key_hash = ${keyHash}`);
    expect(lifetime).toBe(24);

    // Just before expiry, a replay; once expired, a new subscription.
    await service.ctx.db.slonik.query(sql.unsafe`UPDATE idempotency_keys SET expires_at = now() + interval '1 minute' WHERE key_hash = ${keyHash}`);
    expect((await post('/api/employer/webhooks', webhookBody(), { key })).body.id).toBe(first.body.id);
    await service.ctx.db.slonik.query(sql.unsafe`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key_hash = ${keyHash}`);
    const webhooks = await count('webhook_subscriptions');
    const after = await post('/api/employer/webhooks', webhookBody(), { key });
    expect(after.status).toBe(201);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(after.body.id).not.toBe(first.body.id);
    expect(await count('webhook_subscriptions')).toBe(webhooks + 1);
  });

  it('sweeps expired keys of every employer on the next claim', async () => {
    const stale = newKey();
    await post('/api/employer/webhooks', webhookBody(), { key: stale });
    const staleHash = createHash('sha256').update(stale).digest('hex');
    await service.ctx.db.slonik.query(sql.unsafe`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key_hash = ${staleHash}`);
    const other = await service.createTenant();
    await post('/api/employer/webhooks', webhookBody(), { key: newKey(), cookie: other.cookie });
    expect(await service.ctx.db.slonik.maybeOne(sql.unsafe`SELECT 1 FROM idempotency_keys WHERE key_hash = ${staleHash}`)).toBeNull();
  });

  it('answers 409 IDEMPOTENCY_KEY_IN_USE while the first request runs, and replays it once finished; the handler runs once', async () => {
    gate.close();
    const runsBefore = gate.runs;
    const key = newKey();
    const first = post('/probe/gated', { n: 1 }, { key });
    const keyHash = createHash('sha256').update(key).digest('hex');
    await waitUntil('the first request to claim the key', async () => gate.runs === runsBefore + 1 &&
      (await service.ctx.db.slonik.maybeOne(sql.unsafe`SELECT 1 FROM idempotency_keys WHERE key_hash = ${keyHash} AND response_status IS NULL`)) !== null, 10_000);

    const second = await post('/probe/gated', { n: 1 }, { key });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE', requestId: expect.any(String) });
    // Another body is a reuse even while the first runs.
    expect((await post('/probe/gated', { n: 2 }, { key })).status).toBe(422);

    gate.open();
    const answered = await first;
    expect(answered.status).toBe(201);
    expect(answered.headers.get('location')).toBe(`/probe/gated/${runsBefore + 1}`);
    const replay = await post('/probe/gated', { n: 1 }, { key });
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(answered.body);
    expect(replay.headers.get('location')).toBe(answered.headers.get('location'));
    expect(gate.runs).toBe(runsBefore + 1);
  });

  it('lets concurrent duplicates create exactly one webhook: each answers 201 with it, or 409', async () => {
    const other = await service.createTenant();
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 6 }, () => post('/api/employer/webhooks', webhookBody('race'), { key, cookie: other.cookie })));
    const created = answers.filter((answer) => answer.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(answers.every((answer) => answer.status === 201 || (answer.status === 409 && answer.body.code === 'IDEMPOTENCY_KEY_IN_USE'))).toBe(true);
    expect(new Set(created.map((answer) => answer.body.id)).size).toBe(1);
    const list = await fetch(`${service.url}/api/employer/webhooks`, { headers: service.sessionHeaders(other.cookie) });
    expect(((await list.json()) as { webhooks: unknown[] }).webhooks).toHaveLength(1);
  });

  it('stores the key only as its SHA-256 and the response only sealed: no raw key, signing secret or Idempotency-Key in clear', async () => {
    const keyForKey = newKey();
    const keyForWebhook = newKey();
    const apiKey = await post('/api/employer/api-keys', { name: 'sealed', scopes: ['cohort:read'] }, { key: keyForKey });
    const webhook = await post('/api/employer/webhooks', webhookBody(), { key: keyForWebhook });
    const rows = await service.ctx.db.slonik.any(sql.type(z.object({ key_hash: z.string(), row: z.string() }))`
      SELECT key_hash, row_to_json(k)::text AS row FROM idempotency_keys k WHERE employer_id = ${tenant.employerId}`);
    const dump = rows.map((row) => row.row).join('\n');
    for (const secret of [apiKey.body.rawKey, String(apiKey.body.rawKey).slice(8), webhook.body.signingSecret, String(webhook.body.signingSecret).slice(6), keyForKey, keyForWebhook]) {
      expect(dump).not.toContain(secret);
    }
    const hashes = rows.map((row) => row.key_hash);
    for (const key of [keyForKey, keyForWebhook]) expect(hashes).toContain(createHash('sha256').update(key).digest('hex'));
    // The replay opens the sealed response: the secret shown once is shown to the retry too.
    expect((await post('/api/employer/webhooks', webhookBody(), { key: keyForWebhook })).body.signingSecret).toBe(webhook.body.signingSecret);
  });

  it('stores what the handler answered, refusals included, but nothing for a request refused by validation', async () => {
    const key = newKey();
    const invalid = await post('/api/employer/webhooks', { url: 'https://127.0.0.1:9/x' }, { key });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ code: 'VALIDATION_ERROR' });
    // Not stored: the corrected request with the same key runs.
    expect((await post('/api/employer/webhooks', webhookBody(), { key })).status).toBe(201);

    const refusedKey = newKey();
    const refused = await post('/api/employer/webhooks', { ...webhookBody(), events: ['no.such.event'] }, { key: refusedKey });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'UNKNOWN_WEBHOOK_EVENT' });
    const refusedAgain = await post('/api/employer/webhooks', { ...webhookBody(), events: ['no.such.event'] }, { key: refusedKey });
    expect(refusedAgain.status).toBe(400);
    expect(refusedAgain.body).toEqual(refused.body);
    expect(refusedAgain.headers.get('idempotent-replayed')).toBe('true');
  });

  it('bounds the header to 1..255 printable ASCII characters (400 VALIDATION_ERROR, nothing stored)', async () => {
    const stored = await count('idempotency_keys');
    for (const key of ['x'.repeat(256), '', 'caf\u00e9']) {
      const response = await post('/api/employer/webhooks', webhookBody(), { key });
      expect(response.status, JSON.stringify(key)).toBe(400);
      expect(response.body).toMatchObject({ code: 'VALIDATION_ERROR', errors: [{ path: 'headers.idempotency-key' }] });
    }
    expect(await count('idempotency_keys')).toBe(stored);
    expect((await post('/api/employer/webhooks', webhookBody(), { key: '~'.repeat(255) })).status).toBe(201);
  });

  it('is documented in /api/openapi on the creating routes: the header with its bounds, 409 and 422', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as { paths: Record<string, Record<string, any>> };
    for (const path of ['/api/employer/api-keys', '/api/employer/webhooks']) {
      const post = document.paths[path]!.post;
      const header = post.parameters.find((parameter: any) => parameter.in === 'header' && parameter.name === 'idempotency-key');
      expect(header, path).toMatchObject({ required: false, schema: { type: 'string', minLength: 1, maxLength: 255 } });
      expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['409', '422']));
      expect(document.paths[path]!.get.parameters.some((parameter: any) => parameter.name === 'idempotency-key')).toBe(false);
    }
  });
});
