// The FHIR API's tests share one service and fhir-kit-client (a client nobody here wrote) clients of
// three employers; importing this module starts them for the importing test file. Every FHIR body a
// test receives under /api/fhir, through the clients or plain fetch, is checked by the shared validators
// (test/support/fhir-validate.ts).
import { Client, RESPONSE_KEY } from 'fhir-kit-client';
import { afterAll, beforeAll, expect } from 'vitest';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { expectValidFhir, validateFhirResponses } from '../support/fhir-validate.ts';
import { startTestService, type TestService } from '../support/service.ts';

export let service: TestService;
export let client: Client;
export let otherClient: Client;
export let readOnlyClient: Client;
export let base: string;
/** The headers of `client` (its API key), for calls made with plain fetch. */
export let mainHeaders: Record<string, string>;

async function clientFor(scopes: ('fhir:read' | 'fhir:write')[]) {
  const tenant = await service.createTenant();
  const { rawKey } = await createApiKey(service, tenant, { scopes, rateLimitPerMinute: 100_000 });
  return { client: new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) }), headers: keyHeaders(rawKey) };
}

let stopValidating: (() => void) | undefined;

beforeAll(async () => {
  service = await startTestService({ env: { FHIR_RATE_LIMIT_PER_MIN: '100000' } });
  base = `${service.url}/api/fhir`;
  stopValidating = validateFhirResponses(base);
  ({ client, headers: mainHeaders } = await clientFor(['fhir:read', 'fhir:write']));
  ({ client: otherClient } = await clientFor(['fhir:read', 'fhir:write']));
  const tenant = await service.createTenant();
  const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
  readOnlyClient = new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) });
});
afterAll(async () => {
  stopValidating?.();
  await service?.stop();
});

/** The response behind a fhir-kit-client result (headers, status). */
export const responseOf = (result: unknown) => (result as Record<string, Response>)[RESPONSE_KEY]!;

/** The shared check of test/support/fhir-validate.ts, under the name these tests have used. */
export const expectValid = expectValidFhir;

/** The status and OperationOutcome of a call that must fail. */
export async function failure(call: Promise<unknown>): Promise<{ status: number; outcome: any }> {
  const error = (await call.then(() => null, (thrown) => thrown)) as { response?: { status: number; data: any } } | null;
  if (!error?.response) throw new Error('the call succeeded');
  expect(error.response.data.resourceType).toBe('OperationOutcome');
  return { status: error.response.status, outcome: error.response.data };
}

let counter = 0;
export const newPatient = (extra: Record<string, unknown> = {}) => {
  counter += 1;
  return {
    resourceType: 'Patient',
    name: [{ family: `Lovelace${counter}`, given: ['Ada'] }],
    telecom: [{ system: 'email', value: `ada.${counter}.${Date.now()}@example.test` }],
    identifier: [{ system: 'urn:test:member', value: `M-${counter}-${Date.now()}` }],
    birthDate: '1815-12-10',
    ...extra,
  };
};

/** The headers of a signed-in PATIENT user of the employer with this e-mail (its compartment is the Patient with that e-mail). */
export async function patientSessionHeaders(employerId: string, email: string): Promise<Record<string, string>> {
  const { userId } = await registerUser(service.ctx.commands, { tenantId: employerId, actor: { type: 'system', id: 'test' } }, {
    employerId, role: 'PATIENT', active: true, source: 'scim',
    profile: { email, userName: email, givenName: null, familyName: null, displayName: null, externalId: null },
  });
  return service.sessionHeaders(await service.signIn(employerId, userId));
}

/** A client of a new employer (an API key with fhir:read and fhir:write) and the employer's id. */
export async function newEmployerClient() {
  const tenant = await service.createTenant();
  const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write'], rateLimitPerMinute: 100_000 });
  return { employerId: tenant.employerId, client: new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) }), headers: keyHeaders(rawKey) };
}
