// /api/openapi is generated from the routes' zod schemas; an independent validator checks it.
import { validate } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';

describe('the OpenAPI description', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.stop());

  it('is a valid OpenAPI 3.1 document covering the registered routes', async () => {
    const response = await fetch(`${service.url}/api/openapi`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    for (const route of service.server!.printRoutes({ commonPrefix: false }).matchAll(/(\/api\/[^\s(]+)/g)) {
      const path = route[1]!.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      if (path === '/api/openapi') continue;
      expect(Object.keys(document.paths), `${path} is documented`).toContain(path);
    }
    expect(document.components.schemas.Error).toBeDefined();
  });

  it('names and tags every operation, each name once', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as { paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>> };
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ at: `${method.toUpperCase()} ${path}`, ...operation })));
    expect(operations.length).toBeGreaterThan(30);
    expect(operations.filter((operation) => !operation.operationId || !/^[a-z][A-Za-z0-9]*$/.test(operation.operationId)).map((operation) => operation.at)).toEqual([]);
    expect(operations.filter((operation) => (operation.tags ?? []).length === 0).map((operation) => operation.at)).toEqual([]);
    const ids = operations.map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operations.find((operation) => operation.at === 'GET /api/employer/webhooks/{webhookId}/deliveries')?.operationId).toBe('getEmployerWebhooksByWebhookIdDeliveries');
  });

  it('serves a readable API reference at /docs', async () => {
    const response = await fetch(`${service.url}/docs/`, { redirect: 'follow' });
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/swagger/i);
  });

  it('answers health and readiness', async () => {
    expect(await (await fetch(`${service.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', database: 'ok' });
  });

  it('answers a malformed JSON body with 400 in the error shape', async () => {
    const tenant = await service.createTenant();
    const response = await fetch(`${service.url}/api/auth/logout`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: '{"not json',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'MALFORMED_JSON', requestId: expect.any(String) });
  });
});
