// The operator's ceiling on a key's rateLimitPerMinute (API_KEY_RATE_LIMIT_MAX_PER_MIN): a larger
// value is refused at creation with a validation error naming the ceiling (and nothing is created),
// /api/openapi states it, and a key given more before the ceiling was set gets the ceiling.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey as createApiKeyCommand } from '../../src/api-keys/commands.ts';
import { keyHeaders, PROBE_SCOPE } from '../support/api-keys.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService, testClock } from './key-service.ts';

const CEILING = 4;

describe('rateLimitPerMinute ceiling', () => {
  const clock = testClock();
  let service: TestService;
  let tenant: Awaited<ReturnType<TestService['createTenant']>>;
  const createKey = (rateLimitPerMinute: number) =>
    fetch(`${service.url}/api/employer/api-keys`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ name: `limit ${rateLimitPerMinute}`, scopes: [PROBE_SCOPE], rateLimitPerMinute }),
    });
  const keyCount = async () => ((await (await fetch(`${service.url}/api/employer/api-keys`, { headers: service.sessionHeaders(tenant.cookie) })).json()) as { keys: unknown[] }).keys.length;

  beforeAll(async () => {
    service = await startKeyService({ clock, env: { API_KEY_RATE_LIMIT_PER_MIN: '2', API_KEY_RATE_LIMIT_MAX_PER_MIN: String(CEILING) } });
    tenant = await service.createTenant();
  });
  afterAll(async () => service?.stop());

  it('refuses a rateLimitPerMinute above the ceiling with a validation error naming it, and creates nothing', async () => {
    const refused = await createKey(CEILING + 1);
    expect(refused.status).toBe(400);
    const body = (await refused.json()) as { code: string; errors: Array<{ path: string; message: string }> };
    expect(body.code).toBe('VALIDATION_ERROR');
    expect(body.errors).toEqual([{ path: 'body.rateLimitPerMinute', message: expect.stringContaining(`at most ${CEILING}`) }]);
    expect(body.errors[0]!.message).toContain('API_KEY_RATE_LIMIT_MAX_PER_MIN');
    expect(await keyCount()).toBe(0);
    expect((await createKey(CEILING)).status).toBe(201);
  });

  it('states the ceiling in /api/openapi', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as any;
    const schema = document.paths['/api/employer/api-keys'].post.requestBody.content['application/json'].schema;
    const property = (schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()] : schema).properties.rateLimitPerMinute;
    expect(property.maximum).toBe(CEILING);
    expect(property.description).toContain('API_KEY_RATE_LIMIT_MAX_PER_MIN');
  });

  it('gives a key created with more before the ceiling was set no more than the ceiling', async () => {
    const { rawKey } = await createApiKeyCommand(service.ctx, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
      name: 'from before the ceiling', scopes: [PROBE_SCOPE], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: 1_000_000, createdBy: tenant.adminUserId, now: clock.now(),
    });
    const answers: number[] = [];
    for (let call = 0; call <= CEILING; call++) answers.push((await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) })).status);
    expect(answers).toEqual([...Array(CEILING).fill(200), 429]);
  });
});
