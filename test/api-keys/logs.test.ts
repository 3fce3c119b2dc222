// A full key life cycle with every log line captured (at trace level): the raw key appears in none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders, PROBE_SCOPE } from '../support/api-keys.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService } from './key-service.ts';

describe('raw API keys never reach the logs', () => {
  const lines: string[] = [];
  let service: TestService;
  beforeAll(async () => {
    service = await startKeyService({ env: { LOG_LEVEL: 'trace' }, logDestination: { write: (line: string) => void lines.push(line) } });
  });
  afterAll(async () => service?.stop());

  it('through creation, use, every kind of refusal, suspension, resumption, revocation and shutdown', async () => {
    const tenant = await service.createTenant();
    const { rawKey, id } = await createApiKey(service, tenant, { scopes: [PROBE_SCOPE], allowedIpCidrs: ['127.0.0.1'] });
    const other = await createApiKey(service, tenant, { scopes: ['fhir:read'], allowedIpCidrs: ['10.0.0.0/8'] });
    const keyUrl = `${service.url}/api/employer/api-keys/${id}`;
    const patch = (status: string) => fetch(keyUrl, {
      method: 'PATCH', headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ status }),
    });
    const probe = (headers: Record<string, string>) => fetch(`${service.url}/probe/scoped`, { headers });

    expect((await probe(keyHeaders(rawKey))).status).toBe(200);
    expect((await probe({ 'x-api-key': rawKey })).status).toBe(400);
    expect((await probe(keyHeaders(other.rawKey))).status).toBe(403);
    expect((await probe({ authorization: `Bearer ${rawKey}` })).status).toBe(401);
    expect((await probe(keyHeaders(rawKey.slice(0, -1) + 'g'))).status).toBe(401);
    await patch('inactive');
    expect((await probe(keyHeaders(rawKey))).status).toBe(401);
    await patch('active');
    await fetch(keyUrl, { method: 'DELETE', headers: service.sessionHeaders(tenant.cookie) });
    expect((await probe(keyHeaders(rawKey))).status).toBe(401);
    await fetch(`${service.url}/api/employer/api-keys`, { method: 'POST', headers: keyHeaders(rawKey) });
    await service.ctx.auth.apiKeys.flush();
    await service.stop();

    const log = lines.join('');
    expect(log).toContain('/api/employer/api-keys'); // the capture really holds the requests
    expect(log).toContain('/probe/scoped');
    for (const key of [rawKey, other.rawKey]) {
      expect(log).not.toContain(key.slice('mt_live_'.length));
      expect(log).not.toContain(key.slice('mt_live_'.length + 8, 40)); // not even a fragment past the displayed prefix
    }
  });
});
