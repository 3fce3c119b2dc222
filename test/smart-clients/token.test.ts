// The token endpoint (POST /api/oauth/token) and discovery, driven as SMART Backend Services clients
// drive them: an assertion signed with jose, form-encoded; every check the spec asks for refused with
// its OAuth error; and the access token on FHIR routes (scope, types, tenant, revocation, API key as
// Bearer refused).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { addPatient } from '../support/patients.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { accessToken, clientAssertion, registerSmartClient, requestToken, smartClientKey, type RegisteredClient } from '../support/smart-clients.ts';

let service: TestService;
let tenant: Awaited<ReturnType<TestService['createTenant']>>;
let client: RegisteredClient;

beforeAll(async () => {
  service = await startTestService({ env: { FHIR_RATE_LIMIT_PER_MIN: '100000', SMART_TOKEN_RATE_LIMIT_PER_MIN: '100000' } });
  tenant = await service.createTenant();
  client = await registerSmartClient(service, tenant, { scopes: ['system/*.rs', 'system/Observation.cruds'] });
});
afterAll(async () => {
  await service?.stop();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}`, accept: 'application/fhir+json' });
const fhir = (path: string, init: RequestInit = {}) => fetch(`${service.url}/api/fhir${path}`, init);

describe('discovery', () => {
  it('publishes the SMART configuration without credentials', async () => {
    const response = await fhir('/.well-known/smart-configuration');
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      token_endpoint: `${service.url}/api/oauth/token`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: expect.arrayContaining(['RS384', 'ES384']),
      scopes_supported: expect.arrayContaining(['system/*.rs']),
      capabilities: expect.arrayContaining(['client-confidential-asymmetric']),
    });
  });

  it('serves the CapabilityStatement without credentials, with the SMART security block; a presented API key is still checked', async () => {
    const response = await fhir('/metadata');
    expect(response.status).toBe(200);
    const statement = (await response.json()) as any;
    expect(statement.rest[0].security.service[0].coding[0]).toEqual({ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' });
    expect(statement.rest[0].security.extension[0]).toEqual({
      url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
      extension: [{ url: 'token', valueUri: `${service.url}/api/oauth/token` }],
    });
    const withBadKey = await fhir('/metadata', { headers: keyHeaders('mt_live_' + '0'.repeat(64)) });
    expect(withBadKey.status).toBe(401);
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['cohort:read'] });
    expect((await fhir('/metadata', { headers: keyHeaders(rawKey) })).status).toBe(403);
    expect((await fhir('/metadata', { headers: { 'x-api-key': rawKey } })).status).toBe(400);
  });
});

describe('token endpoint', () => {
  it('issues a token for the intersection of the asked and registered scopes, RS384 and ES384 alike', async () => {
    for (const alg of ['RS384', 'ES384'] as const) {
      const signed = await registerSmartClient(service, tenant, { key: await smartClientKey(alg), scopes: ['system/Patient.rs', 'system/Observation.rs'] });
      const { status, body, headers } = await requestToken(service, await clientAssertion(service, signed), 'system/*.cruds system/CarePlan.read');
      expect(status).toBe(200);
      expect(headers.get('cache-control')).toBe('no-store');
      expect(body).toMatchObject({ token_type: 'bearer', expires_in: 300, scope: 'system/Patient.rs system/Observation.rs' });
      expect(body.access_token).toMatch(/^smt_/);
    }
  });

  it('refuses each bad assertion with its OAuth error', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, Promise<string>, number, string]> = [
      ['wrong aud', clientAssertion(service, client, { aud: `${service.url}/api/fhir` }), 401, 'invalid_client'],
      ['iss not sub', clientAssertion(service, client, { sub: 'someone-else' }), 401, 'invalid_client'],
      ['unknown client', clientAssertion(service, client, { iss: 'smart_unknown', sub: 'smart_unknown' }), 401, 'invalid_client'],
      ['unknown kid', clientAssertion(service, client, { kid: 'not-a-kid' }), 401, 'invalid_client'],
      ['signed by another key', smartClientKey().then((key) => clientAssertion(service, { ...client, key: { ...key, kid: client.key.kid } })), 401, 'invalid_client'],
      ['expired', clientAssertion(service, client, { exp: now - 60 }), 400, 'invalid_grant'],
      ['exp too far ahead', clientAssertion(service, client, { exp: now + 600 }), 400, 'invalid_grant'],
    ];
    for (const [name, assertion, status, error] of cases) {
      const answer = await requestToken(service, await assertion);
      expect({ name, status: answer.status, error: answer.body.error }).toEqual({ name, status, error });
      expect(answer.body.error_description).toEqual(expect.any(String));
    }
  });

  it('accepts a jti once within its lifetime', async () => {
    const jti = randomUUID();
    const assertion = await clientAssertion(service, client, { jti });
    expect((await requestToken(service, assertion)).status).toBe(200);
    expect(await requestToken(service, assertion)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await requestToken(service, await clientAssertion(service, client, { jti }))).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('refuses scopes outside the registration, unknown scopes and other grant types', async () => {
    expect(await requestToken(service, await clientAssertion(service, client), 'system/Patient.c')).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    expect(await requestToken(service, await clientAssertion(service, client), 'user/*.rs')).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    expect(await requestToken(service, await clientAssertion(service, client), 'system/*.rs', 'authorization_code')).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
  });
});

describe('access tokens on FHIR routes', () => {
  it('reads with the granted scopes and types only, within its employer', async () => {
    const token = await accessToken(service, client, 'system/Patient.rs system/Observation.cruds');
    expect((await fhir('/Patient?_count=1', { headers: bearer(token) })).status).toBe(200);
    const patientId = await addPatient(service, tenant);
    const observation = { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patientId}` } };
    const created = await fhir('/Observation', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/fhir+json' }, body: JSON.stringify(observation) });
    expect(created.status).toBe(201);
    // Read-only on Patient, nothing on CarePlan.
    const patientWrite = await fhir('/Patient', { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Patient' }) });
    expect(patientWrite.status).toBe(403);
    expect(((await patientWrite.json()) as any).resourceType).toBe('OperationOutcome');
    expect((await fhir('/CarePlan', { headers: bearer(token) })).status).toBe(403);
    // Another employer's resource is not found.
    const other = await service.createTenant();
    const otherClient = await registerSmartClient(service, other, { scopes: ['system/*.rs'] });
    const otherToken = await accessToken(service, otherClient);
    const id = ((await created.json()) as any).id;
    expect((await fhir(`/Observation/${id}`, { headers: bearer(token) })).status).toBe(200);
    expect((await fhir(`/Observation/${id}`, { headers: bearer(otherToken) })).status).toBe(404);
  });

  it('refuses an unknown token and an API key sent as Bearer, naming invalid_token', async () => {
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
    for (const token of [rawKey, 'smt_' + 'a'.repeat(43)]) {
      const response = await fhir('/Patient', { headers: { ...bearer(token), 'x-api-version': '2026-02-01' } });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      expect(((await response.json()) as any).resourceType).toBe('OperationOutcome');
    }
    // Elsewhere a Bearer API key opens nothing either.
    expect((await fetch(`${service.url}/api/employer/patients`, { headers: { authorization: `Bearer ${rawKey}` } })).status).toBe(401);
  });

  it('stops working once its client is revoked, within a second', async () => {
    const revocable = await registerSmartClient(service, tenant, { scopes: ['system/*.rs'] });
    const token = await accessToken(service, revocable);
    expect((await fhir('/Patient', { headers: bearer(token) })).status).toBe(200);
    const started = Date.now();
    const revoked = await fetch(`${service.url}/api/employer/smart-clients/${revocable.clientId}`, { method: 'DELETE', headers: service.sessionHeaders(tenant.cookie) });
    expect(revoked.status).toBe(200);
    expect((await fhir('/Patient', { headers: bearer(token) })).status).toBe(401);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await requestToken(service, await clientAssertion(service, revocable))).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });
});
