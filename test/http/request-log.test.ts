// The request log: one line per request, written when it completes, with the request id, and
// nothing secret in it (token query parameters removed, no headers).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';

describe('request log', () => {
  const lines: string[] = [];
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ roles: ['api'], logDestination: { write: (line: string) => void lines.push(line) } });
  });
  afterAll(async () => service?.stop());

  it('writes one line per request with its id, method, redacted URL, status and time', async () => {
    const secret = 'b'.repeat(43);
    const response = await fetch(`${service.url}/api/auth/signin?token=${secret}&next=/x`, {
      headers: { 'x-request-id': 'request-log-1', cookie: `ei_session=${secret}`, 'x-api-key': `mt_live_${'c'.repeat(64)}` },
      redirect: 'manual',
    });
    await response.arrayBuffer();
    expect(response.headers.get('x-request-id')).toBe('request-log-1');

    // The line is written once the response has finished; wait for it, bounded.
    const deadline = Date.now() + 5_000;
    const ofRequest = () => lines.map((line) => JSON.parse(line)).filter((entry) => entry.reqId === 'request-log-1');
    while (ofRequest().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));

    const entries = ofRequest();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      msg: 'request completed',
      req: { method: 'GET', url: '/api/auth/signin?token=[REDACTED]&next=/x', remoteAddress: '127.0.0.1' },
      res: { statusCode: response.status },
      responseTime: expect.any(Number),
    });
    expect(lines.join('')).not.toContain(secret);
    expect(lines.join('')).not.toContain('c'.repeat(64));
    expect(lines.join('')).not.toContain('incoming request');
  });
});
