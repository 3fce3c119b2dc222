// Clients nobody here wrote, authenticated through SMART Backend Services only (an assertion signed with
// jose, a token from the token endpoint, then nothing but Authorization: Bearer): fhirclient (npm, its
// node entry) reading, paging every page (pageLimit: 0), resolving references and client.patient.request;
// fhir-kit-client paging with the bearer token; and a Bulk Data export at system, Patient and Group
// level, files downloaded with the same token; batch and transaction Bundles within the token's types.
// Every FHIR body is checked by the R4 validator.
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import smart from 'fhirclient';
import { Client as FhirKitClient } from 'fhir-kit-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectValidFhir, validateFhirResponses } from '../support/fhir-validate.ts';
import { addPatients } from '../support/patients.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { accessToken, registerSmartClient } from '../support/smart-clients.ts';
import { waitUntil } from '../webhooks/helpers.ts';

let service: TestService;
let base: string;
let stopValidating: (() => void) | undefined;
let token: string;
let cohortId: string;
let patientIds: string[];
let tenant: Awaited<ReturnType<TestService['createTenant']>>;

const expectValid = (resource: unknown) => expectValidFhir(resource);

beforeAll(async () => {
  service = await startTestService({ env: { FHIR_RATE_LIMIT_PER_MIN: '100000' } });
  base = `${service.url}/api/fhir`;
  stopValidating = validateFhirResponses(base);
  tenant = await service.createTenant();
  ({ cohortId, patientIds } = await addPatients(service, tenant, 5));
  const client = await registerSmartClient(service, tenant, { scopes: ['system/*.cruds'] });
  token = await accessToken(service, client, 'system/*.cruds');
  // Two observations of the first patient, written with the token.
  for (const value of [70, 71]) {
    const created = await fetch(`${base}/Observation`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patientIds[0]}` }, valueQuantity: { value, unit: 'kg' } }),
    });
    expect(created.status).toBe(201);
  }
}, 120_000);
afterAll(async () => {
  stopValidating?.();
  await service?.stop();
});

/** fhirclient as a backend service uses it: a client over the server with the token response it obtained. */
function fhirclientWith(tokenResponse: Record<string, unknown>) {
  // The node entry's adapter takes the app's own HTTP request and response (read only by launch flows,
  // which a backend service has none of): a request and response of node's own, on no connection.
  const request = new IncomingMessage(new Socket());
  return smart(request, new ServerResponse(request)).client({ serverUrl: base, tokenResponse: { token_type: 'bearer', ...tokenResponse } as never });
}

describe('fhirclient with a SMART Backend Services token', () => {
  it('reads, pages every page (pageLimit: 0), resolves references and reads the patient compartment', async () => {
    const client = fhirclientWith({ access_token: token, patient: patientIds[0] });
    const patient = (await client.request(`Patient/${patientIds[0]}`)) as any;
    expectValid(patient);
    expect(patient.id).toBe(patientIds[0]);

    // Page 2 onwards come from the next links, which fhirclient follows with the bearer token only.
    const patients = (await client.request('Patient?_count=2', { pageLimit: 0, flat: true })) as any[];
    expect(new Set(patients.map((resource) => resource.id))).toEqual(new Set(patientIds));
    patients.forEach(expectValid);

    const observations = (await client.request(`Observation?subject=Patient/${patientIds[0]}`, { resolveReferences: ['subject'], flat: true, pageLimit: 0 })) as any[];
    expect(observations).toHaveLength(2);
    for (const observation of observations) expect(observation.subject).toMatchObject({ resourceType: 'Patient', id: patientIds[0] });

    const own = (await client.patient.request('Observation', { flat: true, pageLimit: 0 })) as any[];
    expect(own.map((resource) => resource.valueQuantity.value).sort()).toEqual([70, 71]);
  });
});

describe('fhir-kit-client with the bearer token', () => {
  it('searches and follows next links', async () => {
    const client = new FhirKitClient({ baseUrl: base, bearerToken: token });
    const first = (await client.search({ resourceType: 'Patient', searchParams: { _count: 3 } })) as any;
    expectValid(first);
    const second = (await client.nextPage({ bundle: first })) as any;
    expectValid(second);
    const ids = [...first.entry, ...second.entry].map((entry: any) => entry.resource.id);
    expect(new Set(ids)).toEqual(new Set(patientIds));
    expectValid(await client.read({ resourceType: 'Patient', id: patientIds[1]! }));
  });
});

describe('Bulk Data driven by a bearer token', () => {
  async function exportAt(path: string, accessToken = token) {
    const bearer = () => ({ authorization: `Bearer ${accessToken}` });
    const kickOff = await fetch(`${base}${path}/$export?_type=Patient,Observation`, { headers: { ...bearer(), prefer: 'respond-async', accept: 'application/fhir+json' } });
    expect(kickOff.status).toBe(202);
    const status = kickOff.headers.get('content-location')!;
    const manifest = await waitUntil(`the export at ${path}`, async () => {
      const polled = await fetch(status, { headers: bearer() });
      return polled.status === 200 ? ((await polled.json()) as any) : false;
    });
    expect(manifest.requiresAccessToken).toBe(true);
    const resources: any[] = [];
    for (const output of manifest.output) {
      const file = await fetch(output.url, { headers: bearer() });
      expect(file.status).toBe(200);
      resources.push(...(await file.text()).trimEnd().split('\n').map((line) => JSON.parse(line)));
      expect((await fetch(output.url)).status).toBe(401);
    }
    resources.forEach(expectValid);
    return resources;
  }

  it('exports only the types the token may read', async () => {
    const patientsOnly = await accessToken(service, await registerSmartClient(service, tenant, { scopes: ['system/Patient.rs'] }), 'system/Patient.rs');
    const resources = await exportAt('', patientsOnly);
    expect(new Set(resources.map((resource) => resource.resourceType))).toEqual(new Set(['Patient']));
    const refused = await fetch(`${base}/$export?_type=Observation`, { headers: { authorization: `Bearer ${patientsOnly}`, prefer: 'respond-async' } });
    expect(refused.status).toBe(403);
  });

  it('honours `patient` and `_typeFilter` of a POSTed kick-off made with the token', async () => {
    const parameter = [
      ...patientIds.slice(0, 2).map((id) => ({ name: 'patient', valueReference: { reference: `Patient/${id}` } })),
      { name: '_type', valueString: 'Patient,Observation' },
      { name: '_typeFilter', valueString: `Patient?_id=${patientIds[1]}` },
    ];
    const kickOff = await fetch(`${base}/Patient/$export`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, prefer: 'respond-async', 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Parameters', parameter }),
    });
    expect(kickOff.status).toBe(202);
    const manifest = await waitUntil('the filtered export', async () => {
      const polled = await fetch(kickOff.headers.get('content-location')!, { headers: { authorization: `Bearer ${token}` } });
      return polled.status === 200 ? ((await polled.json()) as any) : false;
    });
    const resources = (await Promise.all(manifest.output.map(async (output: { url: string }) => (await (await fetch(output.url, { headers: { authorization: `Bearer ${token}` } })).text()).trimEnd().split('\n'))))
      .flat().map((line: string) => JSON.parse(line));
    resources.forEach(expectValid);
    // The two patients asked for, the Patients filtered to the second; the first one's two Observations.
    expect(resources.filter((resource) => resource.resourceType === 'Patient').map((resource) => resource.id)).toEqual([patientIds[1]]);
    expect(resources.filter((resource) => resource.resourceType === 'Observation').map((resource) => resource.subject.reference)).toEqual([`Patient/${patientIds[0]}`, `Patient/${patientIds[0]}`]);
  });

  it('exports at system, Patient and Group level with the token alone', async () => {
    for (const path of ['', '/Patient', `/Group/${cohortId}`]) {
      const resources = await exportAt(path);
      expect(resources.filter((resource) => resource.resourceType === 'Patient').map((resource) => resource.id).sort()).toEqual([...patientIds].sort());
      expect(resources.filter((resource) => resource.resourceType === 'Observation')).toHaveLength(2);
    }
  });
});

describe('a token granted some types only', () => {
  it('reads no other type through _include, _revinclude or $everything', async () => {
    const observationsOnly = await accessToken(service, await registerSmartClient(service, tenant, { scopes: ['system/Observation.rs'] }), 'system/Observation.rs');
    const patientsOnly = await accessToken(service, await registerSmartClient(service, tenant, { scopes: ['system/Patient.rs'] }), 'system/Patient.rs');
    const get = async (path: string, bearer: string) => {
      const response = await fetch(`${base}/${path}`, { headers: { authorization: `Bearer ${bearer}` } });
      return { status: response.status, body: (await response.json()) as any };
    };

    const included = await get('Observation?_include=Observation:subject', observationsOnly);
    expect(included.status).toBe(403);
    expect(included.body.resourceType).toBe('OperationOutcome');
    expect((await get(`Patient?_id=${patientIds[0]}&_revinclude=Observation:subject`, patientsOnly)).status).toBe(403);
    expect((await get(`Patient/${patientIds[0]}/$everything`, observationsOnly)).status).toBe(403);

    const everything = await get(`Patient/${patientIds[0]}/$everything`, patientsOnly);
    expect(everything.status).toBe(200);
    expect(everything.body.entry.map((entry: any) => entry.resource.resourceType)).toEqual(['Patient']);
    // With every type granted, the same patient's everything holds its Observations too.
    const all = await get(`Patient/${patientIds[0]}/$everything`, token);
    expect(all.body.entry.map((entry: any) => entry.resource.resourceType).sort()).toEqual(['Observation', 'Observation', 'Patient']);
  });
});

describe('batch and transaction Bundles with a token limited to some types', () => {
  it('checks each entry against the types its scopes name: fhir:read for GET, fhir:write for the others (403 OperationOutcome)', async () => {
    // An employer of its own: the exports above count this employer's Observations.
    const own = await service.createTenant();
    const [patientId] = (await addPatients(service, own, 1)).patientIds;
    const bundleWith = (accessToken: string) => async (bundle: Record<string, unknown>) => {
      const response = await fetch(base, { method: 'POST', headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/fhir+json' }, body: JSON.stringify(bundle) });
      const body = (await response.json()) as any;
      expectValid(body);
      return { status: response.status, body };
    };
    const observation = { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patientId}` }, valueQuantity: { value: 80, unit: 'kg' } };
    const observationsToken = await accessToken(service, await registerSmartClient(service, own, { scopes: ['system/Observation.cruds'] }), 'system/Observation.cruds');
    const observationsOnly = bundleWith(observationsToken);

    const batch = await observationsOnly({
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { resource: observation, request: { method: 'POST', url: 'Observation' } },
        { request: { method: 'GET', url: `Observation?subject=Patient/${patientId}` } },
        { request: { method: 'GET', url: `Patient/${patientId}` } },
        { resource: { resourceType: 'Patient', name: [{ family: 'Refused' }] }, request: { method: 'POST', url: 'Patient' } },
        { request: { method: 'DELETE', url: `Patient/${patientId}` } },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.entry.map((entry: any) => entry.response.status)).toEqual(['201 Created', '200 OK', '403', '403', '403']);
    expect(batch.body.entry[1].resource).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 });
    expect(batch.body.entry.slice(2).map((entry: any) => entry.response.outcome.issue[0].code)).toEqual(['forbidden', 'forbidden', 'forbidden']);
    expect(batch.body.entry[2].response.outcome.issue[0].diagnostics).toContain('GET entries of Patient need fhir:read for Patient');

    const transaction = await observationsOnly({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { resource: observation, request: { method: 'POST', url: 'Observation' } },
        { request: { method: 'GET', url: `Patient/${patientId}` } },
      ],
    });
    expect(transaction.status).toBe(403);
    expect(transaction.body.issue[0]).toMatchObject({ code: 'forbidden', diagnostics: expect.stringContaining('entry 1: GET entries of Patient need fhir:read for Patient') });
    // Refused as a whole: entry 0's Observation was not written (only the batch's is there).
    const search = await fetch(`${base}/Observation?subject=Patient/${patientId}`, { headers: { authorization: `Bearer ${observationsToken}` } });
    expect(((await search.json()) as any).total).toBe(1);

    // A conditional create answers with its match: a token that may create Observations but not read them is refused it.
    const createOnly = bundleWith(await accessToken(service, await registerSmartClient(service, own, { scopes: ['system/Observation.c'] }), 'system/Observation.c'));
    const conditional = await createOnly({
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { resource: observation, request: { method: 'POST', url: 'Observation', ifNoneExist: `subject=Patient/${patientId}` } },
        { resource: observation, request: { method: 'POST', url: 'Observation' } },
      ],
    });
    expect(conditional.body.entry.map((entry: any) => entry.response.status)).toEqual(['403', '201 Created']);
    expect(conditional.body.entry[0].response.outcome.issue[0].diagnostics).toContain('needs fhir:read (for Observation)');
  });
});
