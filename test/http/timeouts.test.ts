// Slow clients hold no connection for long: headers must arrive within HTTP_HEADERS_TIMEOUT_MS and the
// whole request within HTTP_REQUEST_TIMEOUT_MS, else the server answers 408 and closes. Real sockets
// that keep sending, byte by byte, so only the total time can end them.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startTestService, type TestService } from '../support/service.ts';

describe('HTTP request and header timeouts', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ env: { HTTP_HEADERS_TIMEOUT_MS: '400', HTTP_REQUEST_TIMEOUT_MS: '1000' } });
  });
  afterAll(async () => service?.stop());

  /** Opens a socket, writes `start`, then one more chunk every 50 ms until the server closes it (bounded). */
  const dripUntilClosed = (start: string, chunk: string) =>
    new Promise<{ answer: string; elapsedMs: number }>((resolve, reject) => {
      const { hostname, port } = new URL(service.url);
      const socket: Socket = connect(Number(port), hostname);
      const startedAt = Date.now();
      let answer = '';
      let drip: ReturnType<typeof setInterval> | undefined;
      const bound = setTimeout(() => {
        socket.destroy();
        reject(new Error(`the server kept the connection open for 10 s; it answered ${JSON.stringify(answer)}`));
      }, 10_000);
      // The drip starts once `start` is written: a chunk queued before it (a slow connect) is not HTTP.
      socket.on('connect', () => {
        socket.write(start);
        drip = setInterval(() => socket.writable && socket.write(chunk), 50);
      });
      socket.on('data', (data) => (answer += data.toString('latin1')));
      socket.on('error', () => {});
      socket.on('close', () => {
        clearInterval(drip);
        clearTimeout(bound);
        resolve({ answer, elapsedMs: Date.now() - startedAt });
      });
    });

  it('answers 408 and closes a connection whose headers keep trickling in', async () => {
    const { answer, elapsedMs } = await dripUntilClosed('GET /healthz HTTP/1.1\r\nHost: test\r\n', 'X-Slow: a\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(elapsedMs).toBeGreaterThanOrEqual(400);
  });

  it('answers 408 and closes a connection whose body keeps trickling in', async () => {
    // A public route: a caller that must authenticate is answered before its body is read.
    const request = 'POST /api/auth/saml/callback/emp_slow HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n';
    const { answer, elapsedMs } = await dripUntilClosed(request, 'A');
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(elapsedMs).toBeGreaterThanOrEqual(1000);
  });

  it('serves a client that sends its request in time', async () => {
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  });

  it('refuses a headers timeout longer than the request timeout', () => {
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '1000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS: must not exceed/);
    expect(loadConfig({})).toMatchObject({ HTTP_HEADERS_TIMEOUT_MS: 10_000, HTTP_REQUEST_TIMEOUT_MS: 60_000, WEBHOOK_DNS_TIMEOUT_MS: 2_000 });
  });
});
