// Delete (src/patients/fhir/delete.ts), driven by fhir-kit-client and plain fetch: a clinical resource's
// deletion is a version (410 after, vread of earlier versions, search no longer finds it, audited);
// deleting again answers the same; a Patient is erased only in an administrator's session.
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { expectValidFhir } from '../support/fhir-validate.ts';
import { base, client, failure, newPatient, otherClient, responseOf, service } from './fhir-api.ts';

const observationOf = (patientId: string) => ({
  resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '29463-7' }] }, subject: { reference: `Patient/${patientId}` }, valueQuantity: { value: 70, unit: 'kg' },
});

let tenant: { employerId: string; cookie: string };
let keyHeadersOfTenant: Record<string, string>;

beforeAll(async () => {
  tenant = await service.createTenant();
  keyHeadersOfTenant = keyHeaders((await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write'] })).rawKey);
});

const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
  const response = await fetch(`${base}/${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/fhir+json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? null : expectValidFhir(JSON.parse(text) as any) };
};

describe('delete', () => {
  it('deletes a clinical resource as a version: 204, then read 410, vread of the earlier version, search without it, and again 204', async () => {
    const patient = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const observation = await client.create({ resourceType: 'Observation', body: observationOf(patient.id) }) as any;
    const kept = await client.create({ resourceType: 'Observation', body: observationOf(patient.id) }) as any;

    const deleted = await client.delete({ resourceType: 'Observation', id: observation.id });
    expect(responseOf(deleted).status).toBe(204);
    expect(responseOf(deleted).headers.get('etag')).toBe('W/"2"');

    const read = await failure(client.read({ resourceType: 'Observation', id: observation.id }));
    expect(read.status).toBe(410);
    expect(read.outcome.issue[0].code).toBe('deleted');
    expect(expectValidFhir(await client.vread({ resourceType: 'Observation', id: observation.id, version: '1' }))).toEqual(observation);
    expect((await failure(client.vread({ resourceType: 'Observation', id: observation.id, version: '2' }))).status).toBe(410);

    const found = expectValidFhir(await client.search({ resourceType: 'Observation', searchParams: { subject: `Patient/${patient.id}` } })) as any;
    expect(found.entry.map((entry: any) => entry.resource.id)).toEqual([kept.id]);
    const byId = expectValidFhir(await client.search({ resourceType: 'Observation', searchParams: { _id: observation.id } })) as any;
    expect(byId.total).toBe(0);

    const again = await client.delete({ resourceType: 'Observation', id: observation.id });
    expect(responseOf(again).status).toBe(204);
    expect(responseOf(again).headers.get('etag')).toBe('W/"2"');
  });

  it('answers 404 for an id that never existed or is another employer\'s, and 412 for a stale If-Match', async () => {
    expect((await failure(client.delete({ resourceType: 'Observation', id: 'never-was' }))).status).toBe(404);
    const patient = await otherClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const theirs = await otherClient.create({ resourceType: 'Observation', body: observationOf(patient.id) }) as any;
    expect((await failure(client.delete({ resourceType: 'Observation', id: theirs.id }))).status).toBe(404);
    expect(responseOf(await otherClient.read({ resourceType: 'Observation', id: theirs.id })).status).toBe(200);

    const stale = await failure(otherClient.delete({ resourceType: 'Observation', id: theirs.id, options: { headers: { 'If-Match': 'W/"2"' } } }));
    expect(stale.status).toBe(412);
    expect(responseOf(await otherClient.delete({ resourceType: 'Observation', id: theirs.id, options: { headers: { 'If-Match': 'W/"1"' } } })).status).toBe(204);
  });

  it('brings a deleted resource back with an update (a new version)', async () => {
    const patient = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const observation = await client.create({ resourceType: 'Observation', body: observationOf(patient.id) }) as any;
    await client.delete({ resourceType: 'Observation', id: observation.id });
    const back = expectValidFhir(await client.update({ resourceType: 'Observation', id: observation.id, body: { ...observationOf(patient.id), id: observation.id } })) as any;
    expect(back.meta.versionId).toBe('3');
    expect((expectValidFhir(await client.read({ resourceType: 'Observation', id: observation.id })) as any).meta.versionId).toBe('3');
  });

  it('erases a Patient for an administrator\'s session only (an API key gets 403 naming the erasure route), and audits both deletes', async () => {
    const patient = (await call('POST', 'Patient', keyHeadersOfTenant, newPatient())).body;
    const observation = (await call('POST', 'Observation', keyHeadersOfTenant, observationOf(patient.id))).body;

    const byKey = await call('DELETE', `Patient/${patient.id}`, keyHeadersOfTenant);
    expect(byKey.status).toBe(403);
    expect(byKey.body.issue[0].diagnostics).toContain(`DELETE /api/employer/patients/${patient.id}/personal-data`);
    expect((await call('GET', `Patient/${patient.id}`, keyHeadersOfTenant)).status).toBe(200);

    expect((await call('DELETE', `Observation/${observation.id}`, keyHeadersOfTenant)).status).toBe(204);
    const bySession = await call('DELETE', `Patient/${patient.id}`, service.sessionHeaders(tenant.cookie));
    expect(bySession.status).toBe(204);
    const gone = await call('GET', `Patient/${patient.id}`, keyHeadersOfTenant);
    expect(gone.status).toBe(410);
    expect((await call('DELETE', `Patient/${patient.id}`, service.sessionHeaders(tenant.cookie))).status).toBe(204);

    await service.ctx.waitForReadModels(await service.ctx.eventStore.headPosition(), ['audit']);
    const audit = await fetch(`${service.url}/api/employer/audit-events`, { headers: service.sessionHeaders(tenant.cookie) }).then((r) => r.json()) as { entries: { action: string; target: { type: string; id: string } }[] };
    expect(audit.entries).toEqual(expect.arrayContaining([
      expect.objectContaining({ action: 'fhir.delete', target: { type: 'Observation', id: observation.id } }),
      expect.objectContaining({ action: 'patient.erase', target: { type: 'Patient', id: patient.id } }),
    ]));
  });
});
