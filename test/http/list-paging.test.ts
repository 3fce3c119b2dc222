// Keyset paging of the API-key and webhook lists: pages follow each other without gaps or repeats,
// ties on created_at included; limit is bounded; a cursor carries nothing across employers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/api-keys/commands.ts';
import { createWebhook } from '../../src/webhooks/commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, webhookEnv } from '../webhooks/helpers.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ env: webhookEnv() });
});
afterAll(async () => service?.stop());

type Tenant = Awaited<ReturnType<TestService['createTenant']>>;

const context = (tenant: Tenant) => ({ tenantId: tenant.employerId, actor: { type: 'user' as const, id: tenant.adminUserId } });

// Several rows share one created_at, so the id must break ties for the pages to be exact.
const SHARED_INSTANT = Date.parse('2030-01-01T00:00:00.000Z');

const lists = [
  {
    name: 'API keys',
    path: '/api/employer/api-keys',
    field: 'keys',
    order: 'newest first',
    async create(tenant: Tenant, index: number): Promise<string> {
      const now = index % 3 === 0 ? SHARED_INSTANT : SHARED_INSTANT + index;
      const { keyId } = await createApiKey(service.ctx, context(tenant), {
        name: `key ${index}`, scopes: ['cohort:read'], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: null, createdBy: tenant.adminUserId, now,
      });
      return keyId;
    },
  },
  {
    name: 'webhooks',
    path: '/api/employer/webhooks',
    field: 'webhooks',
    order: 'oldest first',
    async create(tenant: Tenant, index: number): Promise<string> {
      const { webhookId } = await createWebhook(service.ctx, context(tenant), {
        url: `https://127.0.0.1:9/hook-${index}`, events: ['test.ping'], description: null, maxFailures: 10,
      });
      return webhookId;
    },
  },
] as const;

/** Creates `count` rows, `parallel` at a time (concurrent creates also land on equal timestamps). */
async function createMany(create: (index: number) => Promise<string>, count: number, parallel = 8): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += parallel) {
    ids.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - start) }, (_, offset) => create(start + offset)))));
  }
  return ids;
}

describe.each(lists)('paging the $name list', (list) => {
  let tenant: Tenant;
  let other: Tenant;
  let ids: string[];
  const api = (who: Tenant) => apiClient(service, who);
  const idsOf = (body: any): string[] => body[list.field].map((row: { id: string }) => row.id);

  beforeAll(async () => {
    [tenant, other] = await Promise.all([service.createTenant(), service.createTenant()]);
    ids = await createMany((index) => list.create(tenant, index), 53);
    await createMany((index) => list.create(other, index), 3);
  });

  it(`pages through every row exactly once, ${list.order}, with nextCursor null on the last page`, async () => {
    const full = await api(tenant).get(`${list.path}?limit=200`);
    expect(full.status).toBe(200);
    expect(full.body.nextCursor).toBeNull();
    expect(new Set(idsOf(full.body))).toEqual(new Set(ids));
    const createdAts = full.body[list.field].map((row: { createdAt: string }) => Date.parse(row.createdAt));
    const sorted = [...createdAts].sort((a, b) => (list.order === 'newest first' ? b - a : a - b));
    expect(createdAts).toEqual(sorted);

    const paged: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: any } = await api(tenant).get(`${list.path}?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(idsOf(page.body).length).toBeLessThanOrEqual(7);
      paged.push(...idsOf(page.body));
      cursor = page.body.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 20);
    expect(pages).toBe(8);
    expect(paged).toEqual(idsOf(full.body));
  });

  it('answers 50 rows by default and keeps the fields it carried before paging', async () => {
    const first = await api(tenant).get(list.path);
    expect(idsOf(first.body)).toHaveLength(50);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expect(first.body).toHaveProperty(list.field === 'keys' ? 'availableScopes' : 'availableEvents');
    const rest = await api(tenant).get(`${list.path}?cursor=${first.body.nextCursor}`);
    expect(idsOf(rest.body)).toHaveLength(3);
    expect(rest.body.nextCursor).toBeNull();
  });

  it('bounds limit to 1..200 (400 VALIDATION_ERROR) and refuses a cursor it did not hand out (400 INVALID_CURSOR)', async () => {
    expect((await api(tenant).get(`${list.path}?limit=200`)).status).toBe(200);
    for (const limit of ['201', '0', '-1', '1.5', 'ten']) {
      const response = await api(tenant).get(`${list.path}?limit=${limit}`);
      expect(response.status, limit).toBe(400);
      expect(response.body).toMatchObject({ code: 'VALIDATION_ERROR', requestId: expect.any(String) });
    }
    for (const cursor of ['garbage', Buffer.from('["not a time","x"]').toString('base64url'), Buffer.from('{}').toString('base64url')]) {
      const response = await api(tenant).get(`${list.path}?cursor=${cursor}`);
      expect(response.status, cursor).toBe(400);
      expect(response.body).toMatchObject({ code: 'INVALID_CURSOR' });
    }
  });

  it("shows nothing of another employer's list, whichever cursor is presented", async () => {
    const otherIds = idsOf((await api(other).get(list.path)).body);
    expect(otherIds).toHaveLength(3);
    expect(otherIds.some((id) => ids.includes(id))).toBe(false);

    // The other employer replays this employer's cursors: it still sees only its own rows.
    let cursor: string | null = (await api(tenant).get(`${list.path}?limit=1`)).body.nextCursor;
    const seen: string[] = [];
    while (cursor !== null) {
      const page: { status: number; body: any } = await api(other).get(`${list.path}?limit=2&cursor=${cursor}`);
      expect(page.status).toBe(200);
      seen.push(...idsOf(page.body));
      cursor = page.body.nextCursor;
    }
    expect(seen.every((id) => otherIds.includes(id))).toBe(true);
  });
});
