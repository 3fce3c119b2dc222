// Input bounded at the boundary: an over-long field is refused before anything is written, in the
// route's error shape, and an over-large body is refused with 413 naming the limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { BODY_LIMIT_BYTES, HEADERS_LIMIT_BYTES, SAML_CALLBACK_BODY_LIMIT_BYTES, SCIM_TEXT_MAX } from '../../src/http/limits.ts';
import { MAX_PATCH_OPERATIONS } from '../../src/scim/patch.ts';
import { SCIM_ERROR_SCHEMA } from '../support/error-shapes.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { scimTenant, USER_SCHEMA } from '../scim/scim-client.ts';

describe('input bounds', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.stop());

  const eventCount = () => service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM events`) as Promise<number>;

  it('refuses a SCIM userName of 4,000 characters with 400 invalidValue and writes nothing (it once stopped the users projection)', async () => {
    const { scim } = await scimTenant(service);
    const before = await eventCount();
    const userName = `${'x'.repeat(4_000 - '@example.test'.length)}@example.test`;
    const refused = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName, emails: [{ value: 'long@example.test', primary: true }] });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(refused.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '400', scimType: 'invalidValue', detail: expect.stringContaining('userName') });
    expect(await eventCount()).toBe(before);

    // The longest accepted userName provisions, and the users projection keeps up (its waiter answers).
    const atLimit = `${'y'.repeat(SCIM_TEXT_MAX - '@example.test'.length)}@example.test`;
    const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: atLimit, emails: [{ value: 'at-limit@example.test', primary: true }] });
    expect(created.status).toBe(201);
    expect((await scim.request('GET', `/Users/${created.body.id}`)).body.userName).toBe(atLimit);
  });

  it('refuses over-long SCIM attributes in PATCH and in groups too, in the SCIM envelope', async () => {
    const { scim } = await scimTenant(service);
    const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'bounded@example.test' });
    expect(created.status).toBe(201);
    const patched = await scim.request('PATCH', `/Users/${created.body.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', path: 'externalId', value: 'e'.repeat(SCIM_TEXT_MAX + 1) }],
    });
    expect(patched.status).toBe(400);
    expect(patched.body).toMatchObject({ schemas: [SCIM_ERROR_SCHEMA], status: '400', scimType: 'invalidValue', detail: expect.stringContaining('externalId') });
    const tooManyOperations = await scim.request('PATCH', `/Users/${created.body.id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: Array.from({ length: MAX_PATCH_OPERATIONS + 1 }, () => ({ op: 'replace', path: 'active', value: true })),
    });
    expect(tooManyOperations.status).toBe(400);
    expect(tooManyOperations.body).toMatchObject({ schemas: [SCIM_ERROR_SCHEMA], status: '400', scimType: 'invalidValue', detail: expect.stringContaining('Operations') });
    const group = await scim.request('POST', '/Groups', { displayName: 'g'.repeat(SCIM_TEXT_MAX + 1) });
    expect(group.status).toBe(400);
    expect(group.body).toMatchObject({ status: '400', scimType: 'invalidValue', detail: expect.stringContaining('displayName') });
  });

  it('refuses an over-long employer-route field with 400 VALIDATION_ERROR naming the field', async () => {
    const tenant = await service.createTenant();
    const before = await eventCount();
    const response = await fetch(`${service.url}/api/employer/webhooks`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://hooks.example.test/x', events: ['test.ping'], description: 'd'.repeat(5_000) }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      code: 'VALIDATION_ERROR',
      requestId: expect.any(String),
      errors: [{ path: 'body.description', message: expect.stringMatching(/1000/) }],
    });
    expect(await eventCount()).toBe(before);
  });

  it('documents the bounds in /api/openapi', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as any;
    const webhookBody = document.paths['/api/employer/webhooks'].post.requestBody.content['application/json'].schema;
    expect(webhookBody.properties.description.maxLength).toBe(1000);
    expect(webhookBody.properties.events.maxItems).toBeGreaterThan(0);
    expect(document.paths['/api/employer/webhooks'].post.responses['413'].description).toMatch(/1 MiB/);
    const scimUser = document.paths['/api/scim/v2/Users'].post.requestBody.content['application/json'].schema;
    expect(scimUser.properties.userName.maxLength).toBe(SCIM_TEXT_MAX);
  });

  it('refuses text no read model can hold (NUL, unpaired surrogates) and JSON nested too deep, with 400 instead of 500', async () => {
    const tenant = await service.createTenant();
    const headers = { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' };
    const nulInPath = await fetch(`${service.url}/api/employer/api-keys/a%00b`, { headers });
    expect(nulInPath.status).toBe(400);
    expect(await nulInPath.json()).toMatchObject({ code: 'VALIDATION_ERROR', errors: [{ path: 'params.keyId' }] });
    const surrogate = await fetch(`${service.url}/api/employer/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: 'https://hooks.example.test/x', events: ['test.ping'], description: 'half \uD800 a pair' }),
    });
    expect(surrogate.status).toBe(400);
    expect(await surrogate.json()).toMatchObject({ code: 'VALIDATION_ERROR', errors: [{ path: 'body.description' }] });
    const deep = await fetch(`${service.url}/api/employer/webhooks`, { method: 'POST', headers, body: `${'['.repeat(100_000)}${']'.repeat(100_000)}` });
    expect(deep.status).toBe(400);
    expect(await deep.json()).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('nested deeper') });

    const { scim } = await scimTenant(service);
    const nulUser = await scim.request('PATCH', '/Users/%00', { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] });
    expect(nulUser.status).toBe(400);
    expect(nulUser.body).toMatchObject({ schemas: [SCIM_ERROR_SCHEMA], status: '400', scimType: 'invalidValue' });
  });

  it('answers a path that does not decode and headers over 16 KiB in the shape of the path\'s routes', async () => {
    const { scim } = await scimTenant(service);
    const badScimPath = await scim.request('GET', '/Users/%E0%A4%A');
    expect(badScimPath.status).toBe(400);
    expect(badScimPath.body).toMatchObject({ schemas: [SCIM_ERROR_SCHEMA], status: '400', detail: expect.any(String) });
    const badEmployerPath = await fetch(`${service.url}/api/employer/webhooks/%ff`);
    expect(badEmployerPath.status).toBe(400);
    expect(await badEmployerPath.json()).toMatchObject({ code: 'MALFORMED_URL', requestId: expect.any(String) });

    const longQuery = `filter=${'x'.repeat(HEADERS_LIMIT_BYTES)}`;
    const scimTooLong = await fetch(`${service.url}/api/scim/v2/Users?${longQuery}`, { headers: { authorization: `Bearer ${scim.token}` } });
    expect(scimTooLong.status).toBe(431);
    expect(scimTooLong.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(await scimTooLong.json()).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '431', detail: expect.stringContaining('16 KiB') });
    const employerTooLong = await fetch(`${service.url}/api/employer/webhooks?${longQuery}`);
    expect(employerTooLong.status).toBe(431);
    expect(await employerTooLong.json()).toEqual({ code: 'HEADERS_TOO_LARGE', message: expect.stringContaining('16 KiB'), limitBytes: HEADERS_LIMIT_BYTES, requestId: expect.any(String) });
  });

  it('answers an over-large body with 413 naming the limit, in each route kind\'s shape', async () => {
    const tenant = await service.createTenant();
    const tooLarge = JSON.stringify({ name: 'k', scopes: ['webhook:manage'], padding: 'p'.repeat(BODY_LIMIT_BYTES) });
    const employer = await fetch(`${service.url}/api/employer/api-keys`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: tooLarge,
    });
    expect(employer.status).toBe(413);
    expect(await employer.json()).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('1 MiB'), limitBytes: BODY_LIMIT_BYTES, requestId: expect.any(String) });

    const { scim } = await scimTenant(service);
    const scimResponse = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'big@example.test', padding: 'p'.repeat(BODY_LIMIT_BYTES) });
    expect(scimResponse.status).toBe(413);
    expect(scimResponse.body).toEqual({ schemas: [SCIM_ERROR_SCHEMA], status: '413', detail: expect.stringContaining('1 MiB') });

    const form = await fetch(`${service.url}/api/auth/saml/callback/${tenant.employerId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `SAMLResponse=${'A'.repeat(SAML_CALLBACK_BODY_LIMIT_BYTES + 1)}`,
    });
    expect(form.status).toBe(413);
    expect(await form.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', limitBytes: SAML_CALLBACK_BODY_LIMIT_BYTES });
  });
});
