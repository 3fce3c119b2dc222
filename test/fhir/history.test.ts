// History (src/patients/fhir/history.ts), driven by fhir-kit-client (resourceHistory, typeHistory,
// nextPage) and fetch for _since and _count: history Bundles, newest first, with each version's request
// and response, deletions without a resource; paged; confined to the employer; none for an erased patient.
import { Client } from 'fhir-kit-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { expectValidFhir } from '../support/fhir-validate.ts';
import { base, client, failure, newPatient, otherClient, service } from './fhir-api.ts';

const observationOf = (patientId: string, value: number) => ({
  resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patientId}` }, valueQuantity: { value, unit: 'kg' },
});
const summary = (bundle: any) => bundle.entry.map((entry: any) => [entry.request.method, entry.response.status, entry.response.etag, entry.resource?.meta.versionId ?? null]);

let tenant: { employerId: string; cookie: string };
let tenantClient: Client;
let tenantHeaders: Record<string, string>;

beforeAll(async () => {
  tenant = await service.createTenant();
  tenantHeaders = keyHeaders((await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write'], rateLimitPerMinute: 100_000 })).rawKey);
  tenantClient = new Client({ baseUrl: base, customHeaders: tenantHeaders });
});

const get = async (path: string) => {
  const response = await fetch(`${base}/${path}`, { headers: tenantHeaders });
  return { status: response.status, body: expectValidFhir(await response.json() as any) };
};

describe('history', () => {
  it('lists a resource\'s versions newest first: POST, PUT, PUT, DELETE, each with its response; older versions as they were', async () => {
    const patient = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const created = await client.create({ resourceType: 'Observation', body: observationOf(patient.id, 70) }) as any;
    await client.update({ resourceType: 'Observation', id: created.id, body: { ...observationOf(patient.id, 71), id: created.id } });
    await client.update({ resourceType: 'Observation', id: created.id, body: { ...observationOf(patient.id, 72), id: created.id } });
    await client.delete({ resourceType: 'Observation', id: created.id });

    const history = expectValidFhir(await client.resourceHistory({ resourceType: 'Observation', id: created.id })) as any;
    expect(history).toMatchObject({ resourceType: 'Bundle', type: 'history', total: 4 });
    expect(summary(history)).toEqual([['DELETE', '204', 'W/"4"', null], ['PUT', '200', 'W/"3"', '3'], ['PUT', '200', 'W/"2"', '2'], ['POST', '201', 'W/"1"', '1']]);
    expect(history.entry[3].resource).toEqual(created);
    expect(history.entry[1].resource.valueQuantity.value).toBe(72);
    expect(history.entry.map((entry: any) => entry.fullUrl)).toEqual(Array(4).fill(`${base}/Observation/${created.id}`));
    expect(history.entry[0].request.url).toBe(`Observation/${created.id}`);
    expect(history.entry[3].request.url).toBe('Observation');
  });

  it('pages by _count through next links, and _since keeps the versions written from then on', async () => {
    let latest = await tenantClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const id = latest.id;
    for (let n = 0; n < 4; n++) latest = await tenantClient.update({ resourceType: 'Patient', id, body: { ...latest, birthDate: `190${n}-01-01` } });

    const first = await get(`Patient/${id}/_history?_count=2`);
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(5);
    const versions: string[] = first.body.entry.map((entry: any) => entry.resource.meta.versionId);
    let page: any = first.body;
    while ((page = await tenantClient.nextPage({ bundle: page }))) versions.push(...expectValidFhir(page).entry.map((entry: any) => entry.resource.meta.versionId));
    expect(versions).toEqual(['5', '4', '3', '2', '1']);

    const third = (await tenantClient.vread({ resourceType: 'Patient', id, version: '3' }) as any).meta.lastUpdated;
    const since = await get(`Patient/${id}/_history?_since=${encodeURIComponent(third)}`);
    expect(since.body.entry.map((entry: any) => entry.resource.meta.versionId)).toEqual(['5', '4', '3']);
    expect((await get(`Patient/${id}/_history?_count=0`)).body).toMatchObject({ total: 5 });
    expect((await get(`Patient/${id}/_history?_since=yesterday`)).status).toBe(400);
    expect((await get(`Patient/${id}/_history?_cursor=made-up`)).status).toBe(400);
  });

  it('lists every version of a type\'s resources, of this employer only, and none of an erased patient (410 for one of its resources)', async () => {
    const kept = await tenantClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const erased = await tenantClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const keptObservation = await tenantClient.create({ resourceType: 'Observation', body: observationOf(kept.id, 60) }) as any;
    await tenantClient.update({ resourceType: 'Observation', id: keptObservation.id, body: { ...observationOf(kept.id, 61), id: keptObservation.id } });
    const erasedObservation = await tenantClient.create({ resourceType: 'Observation', body: observationOf(erased.id, 80) }) as any;
    const theirs = await otherClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    await otherClient.create({ resourceType: 'Observation', body: observationOf(theirs.id, 90) });

    const before = expectValidFhir(await tenantClient.typeHistory({ resourceType: 'Observation' })) as any;
    expect(before.entry.map((entry: any) => [entry.resource.id, entry.resource.meta.versionId])).toEqual([
      [erasedObservation.id, '1'], [keptObservation.id, '2'], [keptObservation.id, '1'],
    ]);

    const erasure = await fetch(`${service.url}/api/employer/patients/${erased.id}/personal-data`, { method: 'DELETE', headers: service.sessionHeaders(tenant.cookie) });
    expect(erasure.status).toBe(200);
    const after = expectValidFhir(await tenantClient.typeHistory({ resourceType: 'Observation' })) as any;
    expect(after.total).toBe(2);
    expect(after.entry.map((entry: any) => entry.resource.id)).toEqual([keptObservation.id, keptObservation.id]);
    expect((await failure(tenantClient.resourceHistory({ resourceType: 'Observation', id: erasedObservation.id }))).status).toBe(410);
    expect((await failure(client.resourceHistory({ resourceType: 'Observation', id: keptObservation.id }))).status).toBe(404);
  });

  it('confines a PATIENT session to its compartment: its own resources\' history, 404 for another patient\'s', async () => {
    const own = await tenantClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const other = await tenantClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const ownObservation = await tenantClient.create({ resourceType: 'Observation', body: observationOf(own.id, 50) }) as any;
    const otherObservation = await tenantClient.create({ resourceType: 'Observation', body: observationOf(other.id, 51) }) as any;
    const email = own.telecom[0].value;
    const { userId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
      employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim',
      profile: { email, userName: email, givenName: null, familyName: null, displayName: null, externalId: null },
    });
    const headers = service.sessionHeaders(await service.signIn(tenant.employerId, userId));
    const asPatient = async (path: string) => {
      const response = await fetch(`${base}/${path}`, { headers });
      return { status: response.status, body: expectValidFhir(await response.json() as any) };
    };
    expect((await asPatient('Observation/_history')).body.entry.map((entry: any) => entry.resource.id)).toEqual([ownObservation.id]);
    expect((await asPatient('Patient/_history')).body.entry.map((entry: any) => entry.resource.id)).toEqual([own.id]);
    expect((await asPatient(`Observation/${ownObservation.id}/_history`)).body.total).toBe(1);
    expect((await asPatient(`Observation/${otherObservation.id}/_history`)).status).toBe(404);
  });
});
