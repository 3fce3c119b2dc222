// With the address check on (the production setting), creating or changing a subscription refuses
// targets that are not public, with a 400 that says they are not allowed, and never what the host
// resolved to. The address classes themselves are covered in test/net/safe-target.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { TARGET_NOT_ALLOWED } from '../../src/net/safe-target.ts';
import { apiClient, type ApiClient } from './helpers.ts';

let service: TestService;
let api: ApiClient;

beforeAll(async () => {
  service = await startTestService();
  api = apiClient(service, await service.createTenant());
});
afterAll(async () => service?.stop());

describe('webhook targets at creation', () => {
  it.each([
    ['https://127.0.0.1/hook', /not allowed/],
    ['https://10.0.0.1/hook', /not allowed/],
    ['https://169.254.169.254/latest/meta-data', /not allowed/],
    ['https://[::1]/hook', /not allowed/],
    ['https://[fc00::1]/hook', /not allowed/],
    ['https://[::ffff:127.0.0.1]/hook', /not allowed/],
    ['https://localhost/hook', /not allowed/],
    ['http://hooks.example.com/in', /must use https, not http/],
    ['not a url', /not a valid absolute URL/],
  ])('refuses %s', async (url, reason) => {
    const response = await api.post('/api/employer/webhooks', { url, events: ['test.ping'] });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'INVALID_WEBHOOK_URL' });
    expect(response.body.message).toMatch(reason);
  });

  it('answers a name resolving to a private address, a name that does not resolve and a literal private IP with the same text', async () => {
    // localhost resolves to loopback; .invalid never resolves (RFC 6761), quickly or after the DNS timeout alike.
    const urls = ['https://localhost/hook', 'https://no-such-host.invalid/hook', 'https://10.0.0.1/hook', 'https://127.0.0.1/hook'];
    const answers = await Promise.all(urls.map(async (url) => {
      const response = await api.post('/api/employer/webhooks', { url, events: ['test.ping'] });
      return { status: response.status, code: response.body.code, message: response.body.message };
    }));
    for (const answer of answers) expect(answer).toEqual({ status: 400, code: 'INVALID_WEBHOOK_URL', message: TARGET_NOT_ALLOWED });
  });

  it('refuses the same targets when a subscription is changed', async () => {
    const created = await api.post('/api/employer/webhooks', { url: 'https://93.184.215.14/hook', events: ['test.ping'] });
    expect(created.status).toBe(201);
    const response = await api.patch(`/api/employer/webhooks/${created.body.id}`, { url: 'https://127.0.0.1/hook' });
    expect(response.status).toBe(400);
    expect((await api.get(`/api/employer/webhooks/${created.body.id}`)).body.url).toBe('https://93.184.215.14/hook');
  });
});
