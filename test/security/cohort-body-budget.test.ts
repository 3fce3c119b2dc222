// Issue 20, item 7: `{"patients":[1,1,1,...]}` with 4,000,000 items (8 MB) was parsed, walked and
// zod-checked before the 10,000-row limit answered 413 (1.15 s each). Now a JSON body is counted while
// it arrives (values, nesting, and the cohort's rows) and refused at the first bound passed, before it
// is parsed; a caller is authenticated before its body is read at all. The observable proof needs no
// clock: each request below declares its full length but sends only the start of its body, and the
// answer arrives while the rest is still unsent, which a service that parses the body first can never do.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FHIR_JSON_VALUES_MAX, JSON_VALUES_MAX } from '../../src/http/limits.ts';
import { MAX_COHORT_ROWS } from '../../src/patients/cohort-row.ts';
import { COHORT_JSON_VALUES_MAX } from '../../src/patients/routes/cohorts.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { scimTenant } from '../scim/scim-client.ts';

let service: TestService;
let keyHeadersWithAllScopes: Record<string, string>;
beforeAll(async () => {
  service = await startTestService();
  const tenant = await service.createTenant();
  const { rawKey } = await createApiKey(service, tenant, { scopes: ['cohort:write', 'fhir:write', 'webhook:manage'], rateLimitPerMinute: 10_000 });
  keyHeadersWithAllScopes = keyHeaders(rawKey);
});
afterAll(async () => service?.stop());

/**
 * POSTs a body declared `declaredBytes` long of which only `start` is sent, and resolves with the answer
 * (the rest is never sent: the answer must come first).
 */
function postStartOnly(path: string, headers: Record<string, string>, start: string, declaredBytes: number): Promise<{ status: number; body: any; unsentBytes: number }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${service.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers, 'content-length': String(declaredBytes) } });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), unsentBytes: declaredBytes - Buffer.byteLength(start) });
      });
    });
    request.on('error', (error) => {
      if (!request.destroyed) reject(error);
    });
    request.write(start);
  });
}

const ones = (count: number) => '1,'.repeat(count);
/** The reproduced attack: 4,000,000 items, 8,000,014 bytes. */
const ATTACK_BYTES = '{"patients":['.length + '1,'.length * 4_000_000 - 1 + ']}'.length;

describe('JSON bodies within a CPU budget', () => {
  it('refuses the reproduced 4,000,000-item cohort once row 10,001 has arrived, before the rest of its 8 MB is sent or anything is parsed', async () => {
    const answer = await postStartOnly('/api/employer/upload-cohort', keyHeadersWithAllScopes, `{"patients":[${ones(MAX_COHORT_ROWS + 1)}`, ATTACK_BYTES);
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ code: 'COHORT_TOO_LARGE', maxRows: MAX_COHORT_ROWS });
    expect(answer.unsentBytes).toBeGreaterThan(7_900_000);
  });

  it('answers an anonymous cohort upload 401 before reading its body', async () => {
    const answer = await postStartOnly('/api/employer/upload-cohort', {}, '{"patients":[', ATTACK_BYTES);
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ code: 'AUTHENTICATION_REQUIRED' });
  });

  it('refuses a cohort body padded with values outside its rows by its count of values', async () => {
    const answer = await postStartOnly('/api/employer/upload-cohort', keyHeadersWithAllScopes, `{"padding":[${ones(COHORT_JSON_VALUES_MAX)}`, ATTACK_BYTES);
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', limitValues: COHORT_JSON_VALUES_MAX });
  });

  it('refuses a FHIR Patient of 200,000 given names (800 KB) by its values, before it is parsed and validated', async () => {
    const start = `{"resourceType":"Patient","name":[{"given":[${'"a",'.repeat(FHIR_JSON_VALUES_MAX)}`;
    const answer = await postStartOnly('/api/fhir/Patient', { ...keyHeadersWithAllScopes, 'content-type': 'application/fhir+json' }, start, 800_047);
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'too-long', diagnostics: expect.stringContaining(`${FHIR_JSON_VALUES_MAX} JSON values`) }] });
  });

  it(`bounds every other JSON body at ${JSON_VALUES_MAX} values, and its nesting, in the route's own error shape`, async () => {
    const webhook = await postStartOnly('/api/employer/webhooks', keyHeadersWithAllScopes, `{"events":[${ones(JSON_VALUES_MAX)}`, 1_000_000);
    expect(webhook.status).toBe(413);
    expect(webhook.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', limitValues: JSON_VALUES_MAX });

    const deep = await postStartOnly('/api/employer/webhooks', keyHeadersWithAllScopes, '['.repeat(100), 1_000_000);
    expect(deep.status).toBe(400);
    expect(deep.body).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('nested deeper') });

    const { token } = await scimTenant(service);
    const scim = await postStartOnly('/api/scim/v2/Users', { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' }, `{"emails":[${ones(JSON_VALUES_MAX)}`, 1_000_000);
    expect(scim.status).toBe(413);
    expect(scim.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '413' });
  });
});

describe('a refusal after fastify has answered', () => {
  it('is no uncaught exception: a chunked body over the byte limit, then nested too deep, is answered 413 and the service goes on', async () => {
    const errors: unknown[] = [];
    const record = (error: unknown) => errors.push(error);
    process.on('uncaughtException', record);
    try {
      const answer = await new Promise<number>((resolve, reject) => {
        // No content-length: fastify counts the bytes as they come and answers 413 past its limit, then
        // stops listening to the body; the scan still sees what follows.
        const request = httpRequest(`${service.url}/api/employer/webhooks`, { method: 'POST', headers: { 'content-type': 'application/json', ...keyHeadersWithAllScopes } });
        request.on('response', (response) => {
          response.resume();
          resolve(response.statusCode!);
        });
        request.on('error', (error) => {
          if (!request.destroyed) reject(error);
        });
        request.write(' '.repeat(1024 * 1024 + 1));
        request.end('['.repeat(100));
      });
      expect(answer).toBe(413);
      const health = await fetch(`${service.url}/healthz`);
      expect(health.status).toBe(200);
      expect(errors).toEqual([]);
    } finally {
      process.off('uncaughtException', record);
    }
  });
});
