// "Bad input gets a clear, documented error and changes nothing": every documented route is called
// with malformed input, as an anonymous caller, a signed-in admin, and an API key holding every
// scope. None may answer 5xx, and every error body must have its route's documented shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/auth/principal.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { errorShapeProblem } from '../support/error-shapes.ts';
import { startTestService, type TestService } from '../support/service.ts';

type OpenApi = { paths: Record<string, Record<string, unknown>> };

const MALFORMED_BODIES: Array<{ contentType: string; body: string }> = [
  { contentType: 'application/json', body: '{"unterminated' },
  { contentType: 'application/json', body: '[1, 2, 3]' },
  { contentType: 'application/json', body: '{"name": {"nested": [null]}, "scopes": 42, "url": 7, "events": "x", "patients": "no", "Operations": 5, "userName": []}' },
  { contentType: 'text/plain', body: 'hello' },
];

describe('malformed input on every documented route', () => {
  let service: TestService;
  let callers: Array<{ name: string; headers: Record<string, string> }>;
  let document: OpenApi;

  beforeAll(async () => {
    // With CRON_SECRET set: unset, /api/cron/* answer a documented 503 (the server is not configured),
    // which says nothing about the input.
    service = await startTestService({ env: { CRON_SECRET: 'bad-input-test-cron-secret' } });
    const tenant = await service.createTenant();
    const { rawKey } = await createApiKey(service, tenant, { scopes: [...SCOPES], rateLimitPerMinute: 100_000 });
    callers = [
      { name: 'anonymous', headers: {} },
      { name: 'admin session', headers: service.sessionHeaders(tenant.cookie) },
      { name: 'api key', headers: keyHeaders(rawKey) },
      { name: 'scim token (bogus)', headers: { authorization: 'Bearer scim_not-a-real-token' } },
    ];
    document = (await (await fetch(`${service.url}/api/openapi`)).json()) as OpenApi;
  });
  afterAll(async () => service?.stop());

  it('answers 4xx in the documented shape, never 5xx', async () => {
    const failures: string[] = [];
    let calls = 0;
    for (const [template, operations] of Object.entries(document.paths)) {
      // Path parameters get values that exist nowhere (and one that is not even well formed).
      for (const id of ['00000000-0000-0000-0000-000000000000', 'not an id %%']) {
        const path = template.replace(/\{[^}]+\}/g, encodeURIComponent(id));
        for (const method of Object.keys(operations)) {
          for (const caller of callers) {
            const bodies = method === 'get' || method === 'delete' ? [null] : MALFORMED_BODIES;
            for (const input of bodies) {
              const response = await fetch(`${service.url}${path}?count=-5&startIndex=abc&filter=userName%20eq&_count=x`, {
                method: method.toUpperCase(),
                redirect: 'manual',
                headers: { ...caller.headers, ...(input ? { 'content-type': input.contentType } : {}) },
                ...(input ? { body: input.body } : {}),
              });
              const text = await response.text();
              calls++;
              if (response.status >= 500) failures.push(`${method.toUpperCase()} ${path} as ${caller.name}: ${response.status} ${text.slice(0, 200)}`);
              else if (response.status >= 400) expect(errorShapeProblem(template, response.status, response.headers.get('content-type') ?? '', text), `${method} ${path} as ${caller.name}`).toBeNull();
            }
          }
        }
      }
    }
    expect(calls).toBeGreaterThan(100);
    expect(failures).toEqual([]);
  }, 240_000);
});
