// GET /api/employer/audit-events on the real service: entries of real commands (keys, webhooks, SSO),
// filters, keyset paging, tenant isolation, no secret in any entry; GET /api/audit/public-key.
import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';

type Entry = { id: string; action: string; actor: { type: string; id: string }; target: { type: string; id: string } | null; occurredAt: string; requestId: string | null; details: Record<string, unknown> };

describe('audit API', () => {
  let service: TestService;
  let acme: { employerId: string; adminUserId: string; cookie: string };
  let globex: { employerId: string; adminUserId: string; cookie: string };
  const secrets: string[] = [];
  const keyIds: string[] = [];

  const get = async (tenant: { cookie: string }, query: Record<string, string> = {}) => {
    const response = await fetch(`${service.url}/api/employer/audit-events?${new URLSearchParams(query)}`, { headers: service.sessionHeaders(tenant.cookie) });
    return { status: response.status, body: (await response.json()) as { entries: Entry[]; nextCursor: string | null; code?: string } };
  };
  const all = async (tenant: { cookie: string }, query: Record<string, string> = {}) => {
    const entries: Entry[] = [];
    let cursor: string | null = null;
    do {
      const { status, body } = await get(tenant, { ...query, limit: '2', ...(cursor ? { cursor } : {}) });
      expect(status).toBe(200);
      entries.push(...body.entries);
      cursor = body.nextCursor;
    } while (cursor);
    return entries;
  };

  beforeAll(async () => {
    service = await startTestService({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
    acme = await service.createTenant();
    globex = await service.createTenant();
    for (const name of ['first', 'second', 'third']) {
      const key = await createApiKey(service, acme, { scopes: ['cohort:read'], name });
      secrets.push(key.rawKey);
      keyIds.push(key.id);
    }
    await fetch(`${service.url}/api/employer/api-keys/${keyIds[0]}`, { method: 'DELETE', headers: service.sessionHeaders(acme.cookie) });
    const webhook = await fetch(`${service.url}/api/employer/webhooks`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(acme.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://localhost:9/hook', events: ['export.ready'] }),
    });
    expect(webhook.status).toBe(201);
    secrets.push(((await webhook.json()) as { signingSecret: string }).signingSecret);
    const sso = await fetch(`${service.url}/api/employer/sso`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(acme.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ scimEnabled: true }),
    });
    expect(sso.status).toBe(200);
    secrets.push(((await sso.json()) as { scimBearerToken: string }).scimBearerToken);
    await createApiKey(service, globex, { scopes: ['cohort:read'], name: 'globex key' });
  }, 60_000);

  afterAll(async () => {
    await service?.stop();
  });

  it('lists every audited action of the employer, newest first, with actor, target, request id and details', async () => {
    const entries = await all(acme);
    const actions = entries.map((entry) => entry.action);
    expect(actions).toEqual(expect.arrayContaining(['api_key.created', 'api_key.revoked', 'sso.config.update']));
    expect(actions.some((action) => action.startsWith('webhook.'))).toBe(true);
    const times = entries.map((entry) => entry.occurredAt);
    expect([...times].sort().reverse()).toEqual(times);
    const created = entries.find((entry) => entry.action === 'api_key.created' && entry.target?.id === keyIds[1])!;
    expect(created).toMatchObject({ actor: { type: 'user', id: acme.adminUserId }, target: { type: 'api_key', id: keyIds[1] }, details: { name: 'second' } });
    expect(created.requestId).toEqual(expect.any(String));
    expect(new Set(entries.map((entry) => entry.id)).size).toBe(entries.length);
  });

  it('never shows a secret: raw keys, webhook signing secrets and SCIM tokens appear in no entry', async () => {
    const text = JSON.stringify(await all(acme));
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it('filters by exact action, action prefix, actor, target and time', async () => {
    const everything = await all(acme);
    const revoked = await all(acme, { action: 'api_key.revoked' });
    expect(revoked.map((entry) => entry.target?.id)).toEqual([keyIds[0]]);
    const keyEntries = await all(acme, { action: 'api_key.' });
    expect(keyEntries.length).toBe(everything.filter((entry) => entry.action.startsWith('api_key.')).length);
    expect(keyEntries.every((entry) => entry.action.startsWith('api_key.'))).toBe(true);
    const byTarget = await all(acme, { targetId: keyIds[2]! });
    expect(byTarget.map((entry) => entry.action)).toEqual(['api_key.created']);
    const byActor = await all(acme, { actorId: acme.adminUserId });
    expect(byActor.length).toBeGreaterThanOrEqual(5);
    expect(byActor.every((entry) => entry.actor.id === acme.adminUserId)).toBe(true);

    const oldest = everything[everything.length - 1]!;
    const newest = everything[0]!;
    expect(await all(acme, { to: oldest.occurredAt })).toEqual([]);
    const fromNewest = await all(acme, { from: newest.occurredAt });
    expect(fromNewest.map((entry) => entry.id)).toContain(newest.id);
    expect(fromNewest.length).toBeLessThan(everything.length);
  });

  it('pages by cursor without repeating or skipping, and refuses bad parameters with 400', async () => {
    const pages = await all(acme);
    const single = await get(acme, { limit: '200' });
    expect(pages.map((entry) => entry.id)).toEqual(single.body.entries.map((entry) => entry.id));
    expect(single.body.nextCursor).toBeNull();
    expect((await get(acme, { limit: '201' })).body.code).toBe('VALIDATION_ERROR');
    expect((await get(acme, { cursor: 'bm90IG91cnM' })).body.code).toBe('INVALID_CURSOR');
    expect((await get(acme, { from: 'yesterday' })).status).toBe(400);
    expect((await get(acme, { action: "x' OR 1=1" })).status).toBe(400);
  });

  it("shows another employer's entries to no one: not by listing, filter or cursor", async () => {
    const globexEntries = await all(globex);
    expect(globexEntries.length).toBeGreaterThan(0);
    const acmeIds = new Set((await all(acme)).map((entry) => entry.id));
    expect(globexEntries.some((entry) => acmeIds.has(entry.id))).toBe(false);
    expect(await all(globex, { targetId: keyIds[1]! })).toEqual([]);
    expect(await all(globex, { actorId: acme.adminUserId })).toEqual([]);
    const acmeCursor = (await get(acme, { limit: '1' })).body.nextCursor!;
    const withForeignCursor = await get(globex, { cursor: acmeCursor });
    expect(withForeignCursor.status).toBe(200);
    expect(withForeignCursor.body.entries.some((entry) => acmeIds.has(entry.id))).toBe(false);
  });

  it('refuses anonymous callers (admin sessions and audit:read keys read it: audit-export.test.ts)', async () => {
    const anonymous = await fetch(`${service.url}/api/employer/audit-events`);
    expect(anonymous.status).toBe(401);
  });

  it('publishes the checkpoint public key', async () => {
    const response = await fetch(`${service.url}/api/audit/public-key`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { algorithm: string; keyId: string; publicKeyPem: string };
    expect(body).toMatchObject({ algorithm: 'Ed25519', keyId: service.ctx.auditSigner.keyId });
    expect(createPublicKey(body.publicKeyPem).equals(service.ctx.auditSigner.publicKey)).toBe(true);
  });
});
