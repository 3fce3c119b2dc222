// Batch and transaction Bundles (src/patients/fhir/bundle.ts), driven by fhir-kit-client (transaction,
// batch): urn:uuid: references resolved, conditional create honoured, all or nothing for a
// transaction, each entry its own status in a batch, the entry limit.
import { Client } from 'fhir-kit-client';
import { describe, expect, it } from 'vitest';
import { MAX_BUNDLE_ENTRIES } from '../../src/patients/fhir/bundle.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { expectValidFhir } from '../support/fhir-validate.ts';
import { base, client, failure, mainHeaders, newPatient, readOnlyClient, service } from './fhir-api.ts';

const observationOf = (reference: string, value = 70) => ({
  resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference }, valueQuantity: { value, unit: 'kg' },
});
const post = (fullUrl: string | undefined, resource: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ...(fullUrl ? { fullUrl } : {}), resource, request: { method: 'POST', url: String(resource.resourceType), ...extra },
});
const statuses = (bundle: any) => bundle.entry.map((entry: any) => entry.response.status);

const searchTotal = async (resourceType: string, searchParams: Record<string, string>) => ((await client.search({ resourceType, searchParams })) as any).total;

describe('transaction', () => {
  it('creates a patient and its resources in one append, resolving urn:uuid: references, and honours ifNoneExist', async () => {
    const existing = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const identifier = existing.identifier[0];
    const patient = newPatient();
    const response = expectValidFhir(await client.transaction({
      body: {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          post('urn:uuid:8c5e0c4e-0000-4000-8000-000000000001', observationOf('urn:uuid:8c5e0c4e-0000-4000-8000-000000000002')),
          post('urn:uuid:8c5e0c4e-0000-4000-8000-000000000002', patient),
          post(undefined, { resourceType: 'CarePlan', status: 'active', intent: 'plan', subject: { reference: 'urn:uuid:8c5e0c4e-0000-4000-8000-000000000002' } }),
          post('urn:uuid:8c5e0c4e-0000-4000-8000-000000000003', newPatient(), { ifNoneExist: `identifier=${identifier.system}|${identifier.value}` }),
          post(undefined, observationOf('urn:uuid:8c5e0c4e-0000-4000-8000-000000000003', 71)),
        ],
      },
    })) as any;
    expect(response.type).toBe('transaction-response');
    expect(statuses(response)).toEqual(['201 Created', '201 Created', '201 Created', '200 OK', '201 Created']);
    const [observation, created, carePlan, matched, second] = response.entry.map((entry: any) => entry.resource);
    expect(created.name).toEqual(patient.name);
    expect(observation.subject.reference).toBe(`Patient/${created.id}`);
    expect(carePlan.subject.reference).toBe(`Patient/${created.id}`);
    expect(matched).toEqual(existing);
    expect(second.subject.reference).toBe(`Patient/${existing.id}`);
    expect(response.entry[1].response).toMatchObject({ location: `Patient/${created.id}/_history/1`, etag: 'W/"1"' });
    expect(response.entry[1].fullUrl).toBe(`${base}/Patient/${created.id}`);
    expect(expectValidFhir(await client.read({ resourceType: 'Observation', id: observation.id }))).toEqual(observation);
    expect(await searchTotal('Observation', { subject: `Patient/${created.id}` })).toBe(1);
  });

  it('updates, deletes and reads in one transaction', async () => {
    const patient = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const kept = await client.create({ resourceType: 'Observation', body: observationOf(`Patient/${patient.id}`) }) as any;
    const removed = await client.create({ resourceType: 'Observation', body: observationOf(`Patient/${patient.id}`) }) as any;
    const response = expectValidFhir(await client.transaction({
      body: {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [
          { request: { method: 'GET', url: `Observation/${kept.id}` } },
          { resource: { ...observationOf(`Patient/${patient.id}`, 99), id: kept.id }, request: { method: 'PUT', url: `Observation/${kept.id}`, ifMatch: 'W/"1"' } },
          { request: { method: 'DELETE', url: `${base}/Observation/${removed.id}` } },
        ],
      },
    })) as any;
    expect(statuses(response)).toEqual(['200 OK', '200 OK', '204 No Content']);
    // GETs are read after the writes.
    expect(response.entry[0].resource.valueQuantity.value).toBe(99);
    expect(response.entry[1].resource.meta.versionId).toBe('2');
    expect(response.entry[2].response.etag).toBe('W/"2"');
    expect((await failure(client.read({ resourceType: 'Observation', id: removed.id }))).status).toBe(410);
  });

  it('writes nothing when one entry is refused, naming the entry', async () => {
    const patient = newPatient();
    const identifier = `${patient.identifier[0]!.system}|${patient.identifier[0]!.value}`;
    const refused = await failure(client.transaction({
      body: { resourceType: 'Bundle', type: 'transaction', entry: [post('urn:uuid:a1', patient), post(undefined, observationOf('Patient/no-such-patient'))] },
    }));
    expect(refused.status).toBe(400);
    expect(refused.outcome.issue[0].diagnostics).toMatch(/^entry 1: subject/);
    expect(await searchTotal('Patient', { identifier })).toBe(0);

    const existing = await client.create({ resourceType: 'Observation', body: observationOf(`Patient/${(await client.create({ resourceType: 'Patient', body: newPatient() }) as any).id}`) }) as any;
    const stale = await failure(client.transaction({
      body: {
        resourceType: 'Bundle',
        type: 'transaction',
        entry: [post('urn:uuid:a2', patient), { resource: { ...existing }, request: { method: 'PUT', url: `Observation/${existing.id}`, ifMatch: 'W/"7"' } }],
      },
    }));
    expect(stale.status).toBe(412);
    expect(await searchTotal('Patient', { identifier })).toBe(0);

    const sameEmail = await failure(client.transaction({
      body: { resourceType: 'Bundle', type: 'transaction', entry: [post(undefined, patient), post(undefined, { ...newPatient(), telecom: patient.telecom })] },
    }));
    expect(sameEmail.status).toBe(409);
    expect(await searchTotal('Patient', { identifier })).toBe(0);
  });

  it(`takes at most ${MAX_BUNDLE_ENTRIES} entries, and answers an empty one`, async () => {
    const entry = Array.from({ length: MAX_BUNDLE_ENTRIES + 1 }, () => ({ request: { method: 'GET', url: 'Patient/x' } }));
    expect((await failure(client.transaction({ body: { resourceType: 'Bundle', type: 'transaction', entry } }))).status).toBe(400);
    expect(expectValidFhir(await client.transaction({ body: { resourceType: 'Bundle', type: 'transaction' } }))).toMatchObject({ resourceType: 'Bundle', type: 'transaction-response' });
  });
});

describe('batch', () => {
  it('does each entry on its own, each with its own status and OperationOutcome when refused', async () => {
    const patient = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const removed = await client.create({ resourceType: 'Observation', body: observationOf(`Patient/${patient.id}`) }) as any;
    const response = expectValidFhir(await client.batch({
      body: {
        resourceType: 'Bundle',
        type: 'batch',
        entry: [
          post(undefined, observationOf(`Patient/${patient.id}`, 80)),
          { request: { method: 'GET', url: 'Observation/never-was' } },
          { request: { method: 'DELETE', url: `Observation/${removed.id}` } },
          { request: { method: 'GET', url: `Patient/${patient.id}` } },
          { resource: { resourceType: 'Observation', status: 'not-a-status' }, request: { method: 'PUT', url: `Observation/${removed.id}` } },
          { request: { method: 'GET', url: `Observation?subject=Patient/${patient.id}&_count=5` } },
          { request: { method: 'GET', url: 'Observation?no-such-parameter=1' } },
        ],
      },
    })) as any;
    expect(response.type).toBe('batch-response');
    expect(statuses(response)).toEqual(['201 Created', '404', '204 No Content', '200 OK', '400', '200 OK', '400']);
    expect(response.entry[5].resource).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 });
    expect(response.entry[5].resource.entry[0].resource.id).toBe(response.entry[0].resource.id);
    expect(response.entry[1].response.outcome.issue[0].code).toBe('not-found');
    expect(response.entry[3].resource).toEqual(patient);
    expect(expectValidFhir(await client.read({ resourceType: 'Observation', id: response.entry[0].resource.id }))).toEqual(response.entry[0].resource);
    expect((await failure(client.read({ resourceType: 'Observation', id: removed.id }))).status).toBe(410);
  });

  it('needs fhir:write, and fhir:read for GET entries; refuses other Bundle types', async () => {
    expect((await failure(readOnlyClient.batch({ body: { resourceType: 'Bundle', type: 'batch', entry: [] } }))).status).toBe(403);
    const tenant = await service.createTenant();
    const writeOnly = new Client({ baseUrl: base, customHeaders: keyHeaders((await createApiKey(service, tenant, { scopes: ['fhir:write'] })).rawKey) });
    const read = expectValidFhir(await writeOnly.batch({ body: { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'GET', url: 'Patient/any' } }] } }));
    expect(statuses(read)).toEqual(['403']);
    const response = await fetch(base, {
      method: 'POST',
      headers: { ...mainHeaders, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Bundle', type: 'collection' }),
    });
    expect(response.status).toBe(400);
    expectValidFhir(await response.json());
  });
});
