// The token endpoint's throttles (tokens per client, failed authentications per address; 429 with
// Retry-After) and, with every log line captured at trace level, no access token or assertion in them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { clientAssertion, registerSmartClient, requestToken } from '../support/smart-clients.ts';

const lines: string[] = [];
let service: TestService;
beforeAll(async () => {
  service = await startTestService({
    env: { LOG_LEVEL: 'trace', SMART_TOKEN_RATE_LIMIT_PER_MIN: '3', SMART_AUTH_FAILURES_PER_ADDRESS_PER_MIN: '5' },
    logDestination: { write: (line: string) => void lines.push(line) },
  });
});
afterAll(async () => service?.stop());

describe('SMART throttles and logs', () => {
  it('limits tokens per client and failed authentications per address, and logs no token or assertion', async () => {
    const tenant = await service.createTenant();
    const client = await registerSmartClient(service, tenant, { scopes: ['system/*.rs'] });
    const secrets: string[] = [];
    for (let issued = 0; issued < 3; issued++) {
      const assertion = await clientAssertion(service, client);
      const answer = await requestToken(service, assertion);
      expect(answer.status).toBe(200);
      secrets.push(assertion, answer.body.access_token);
      expect((await fetch(`${service.url}/api/fhir/Patient`, { headers: { authorization: `Bearer ${answer.body.access_token}` } })).status).toBe(200);
    }
    const fourth = await requestToken(service, await clientAssertion(service, client));
    expect(fourth).toMatchObject({ status: 429, body: { error: 'invalid_request' } });
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0);

    // Failures from one address: the throttle counts them, whatever credential is tried.
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      statuses.push((await fetch(`${service.url}/api/fhir/Patient`, { headers: { authorization: `Bearer smt_guess${attempt}` } })).status);
    }
    expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
    expect(statuses.at(-1)).toBe(429);

    await service.stop();
    const log = lines.join('');
    expect(log).toContain('/api/oauth/token'); // the capture really holds the requests
    for (const secret of secrets) expect(log).not.toContain(secret.slice(-30));
  });
});
