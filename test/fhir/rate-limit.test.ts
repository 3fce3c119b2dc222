// The FHIR rate limit (src/patients/fhir/routes.ts): 120 requests a minute per employer (a bundle's
// entries each one), on a service of its own (the other FHIR tests lift it).
import { describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService } from '../support/service.ts';

describe('rate limit', () => {
  it('answers 429 throttled with Retry-After past 120 requests a minute per employer', async () => {
    const limited = await startTestService();
    try {
      const tenant = await limited.createTenant();
      const { rawKey } = await createApiKey(limited, tenant, { scopes: ['fhir:read'], rateLimitPerMinute: 100_000 });
      const started = Date.now();
      let allowed = 0;
      let last: Response | null = null;
      // 120 at once, then 2 a second (a token bucket): the first 429 comes after 120 plus what refilled meanwhile.
      while (allowed < 400) {
        last = await fetch(`${limited.url}/api/fhir/metadata`, { headers: keyHeaders(rawKey) });
        if (last.status !== 200) break;
        await last.arrayBuffer();
        allowed += 1;
      }
      expect(last!.status).toBe(429);
      expect(allowed).toBeGreaterThanOrEqual(120);
      expect(allowed).toBeLessThanOrEqual(120 + Math.ceil(((Date.now() - started) / 1000) * 2));
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await last!.json()) as any).issue[0].code).toBe('throttled');
    } finally {
      await limited.stop();
    }
  });

  it('counts each entry of a bundle as a request', async () => {
    const limited = await startTestService({ env: { FHIR_RATE_LIMIT_PER_MIN: '150' } });
    try {
      const tenant = await limited.createTenant();
      const { rawKey } = await createApiKey(limited, tenant, { scopes: ['fhir:read', 'fhir:write'], rateLimitPerMinute: 100_000 });
      const batch = () => fetch(`${limited.url}/api/fhir`, {
        method: 'POST',
        headers: { ...keyHeaders(rawKey), 'content-type': 'application/fhir+json' },
        body: JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry: Array.from({ length: 100 }, () => ({ request: { method: 'GET', url: 'Patient?_count=0' } })) }),
      });
      expect((await batch()).status).toBe(200);
      // 50 of the 150 left, and 2.5 more a second: a second bundle of 100 within the next 20 s is too many.
      const second = await batch();
      expect(second.status).toBe(429);
      expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.stop();
    }
  });
});
