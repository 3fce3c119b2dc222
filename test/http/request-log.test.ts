// The request log: one line per request, written when it completes, with the request id, and
// nothing secret or personal in it: no headers, and query strings keep their parameter names but not
// their values (but for paging and options, src/logger.ts's allow-list).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { waitUntil } from '../webhooks/helpers.ts';

describe('request log', () => {
  const lines: string[] = [];
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ roles: ['api'], logDestination: { write: (line: string) => void lines.push(line) } });
  });
  afterAll(async () => service?.stop());

  /** The log entries of one request (the line is written once the response has finished). */
  async function logOf(path: string, requestId: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${service.url}${path}`, { headers: { 'x-request-id': requestId, ...headers }, redirect: 'manual' });
    await response.arrayBuffer();
    const entries = await waitUntil(`the log line of ${requestId}`, () => {
      const found = lines.map((line) => JSON.parse(line)).filter((entry) => entry.reqId === requestId);
      return found.length > 0 && found;
    }, 5_000);
    return { response, entries };
  }

  it('writes one line per request with its id, method, redacted URL, status and time', async () => {
    const secret = 'b'.repeat(43);
    const { response, entries } = await logOf(`/api/auth/signin?token=${secret}&next=/x`, 'request-log-1', {
      cookie: `ei_session=${secret}`, 'x-api-key': `mt_live_${'c'.repeat(64)}`,
    });
    expect(response.headers.get('x-request-id')).toBe('request-log-1');
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      msg: 'request completed',
      req: { method: 'GET', url: '/api/auth/signin?token=[REDACTED]&next=[REDACTED]', remoteAddress: '127.0.0.1' },
      res: { statusCode: response.status },
      responseTime: expect.any(Number),
    });
    expect(lines.join('')).not.toContain(secret);
    expect(lines.join('')).not.toContain('c'.repeat(64));
    expect(lines.join('')).not.toContain('incoming request');
  });

  it('keeps the names of query parameters but not the personal data in their values (FHIR search, SCIM filter, roster search)', async () => {
    const personal = ['alice@example.com', 'Alice', 'Smith', 'Ally', '5550100', 'MRN-4711', '1980-04-02', 'bob@example.com', 'carol@example.com', 'Main Street'];
    const cases: Array<[path: string, logged: string]> = [
      [
        `/api/fhir/Patient?email=${encodeURIComponent(personal[0]!)}&name=${personal[1]}&family:exact=${personal[2]}&given=${personal[3]}&telecom=${personal[4]}` +
          `&identifier=${personal[5]}&birthdate=${personal[6]}&address=${encodeURIComponent(personal[9]!)}&_count=5&_sort=-_lastUpdated`,
        '/api/fhir/Patient?email=[REDACTED]&name=[REDACTED]&family:exact=[REDACTED]&given=[REDACTED]&telecom=[REDACTED]' +
          '&identifier=[REDACTED]&birthdate=[REDACTED]&address=[REDACTED]&_count=5&_sort=-_lastUpdated',
      ],
      [
        `/api/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${personal[7]}"`)}&startIndex=1&count=10`,
        '/api/scim/v2/Users?filter=[REDACTED]&startIndex=1&count=10',
      ],
      [`/api/employer/patients?search=${encodeURIComponent(personal[8]!)}&limit=10&cursor=abc_-1`, '/api/employer/patients?search=[REDACTED]&limit=10&cursor=abc_-1'],
      // A parameter whose name is not a parameter name is data too.
      [`/api/employer/patients?${encodeURIComponent(personal[8]!)}&limit=10`, '/api/employer/patients?[REDACTED]&limit=10'],
    ];
    for (const [index, [path, logged]] of cases.entries()) {
      const { entries } = await logOf(path, `request-log-personal-${index}`);
      expect(entries.map((entry) => entry.req.url)).toEqual([logged]);
      expect(entries[0].level).toBe(30); // info: the level the issue found personal data at
    }
    const log = lines.join('\n');
    for (const value of personal) expect(log).not.toContain(value);
    expect(log).not.toContain(encodeURIComponent(personal[0]!));
  });
});
