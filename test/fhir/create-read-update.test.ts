// Create, read, vread and update (src/patients/fhir/create.ts, read.ts, vread.ts, update.ts), driven by
// fhir-kit-client: server ids, Location, ETag and Last-Modified, If-Match, Prefer, If-None-Exist,
// clinical resources with their patient.
import { describe, expect, it } from 'vitest';
import { client, base, mainHeaders, responseOf, expectValid, failure, newPatient } from './fhir-api.ts';

describe('create, read, vread, update', () => {
  it('creates with a server id (the client id ignored), Location, ETag and Last-Modified; reads and vreads it back', async () => {
    const created = expectValid(await client.create({ resourceType: 'Patient', body: { ...newPatient(), id: 'client-chosen' } }));
    const response = responseOf(created);
    expect(response.status).toBe(201);
    expect(created.id).not.toBe('client-chosen');
    expect(created.meta.versionId).toBe('1');
    expect(response.headers.get('location')).toBe(`${base}/Patient/${created.id}/_history/1`);
    expect(response.headers.get('etag')).toBe('W/"1"');
    expect(new Date(response.headers.get('last-modified')!).getTime()).toBe(Math.floor(Date.parse(created.meta.lastUpdated) / 1000) * 1000);

    const read = expectValid(await client.read({ resourceType: 'Patient', id: created.id }));
    expect(read).toEqual(created);
    expect(responseOf(read).headers.get('etag')).toBe('W/"1"');
    expect(expectValid(await client.vread({ resourceType: 'Patient', id: created.id, version: '1' }))).toEqual(created);
  });

  it('updates with If-Match, refuses a stale ETag with 412 conflict, and keeps every version readable', async () => {
    const created = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const changed = { ...created, birthDate: '1816-01-01' };
    const updated = expectValid(await client.update({ resourceType: 'Patient', id: created.id, body: changed, options: { headers: { 'If-Match': 'W/"1"' } } }));
    expect(updated.meta.versionId).toBe('2');
    expect(responseOf(updated).headers.get('etag')).toBe('W/"2"');

    const stale = await failure(client.update({ resourceType: 'Patient', id: created.id, body: changed, options: { headers: { 'If-Match': 'W/"1"' } } }));
    expect(stale.status).toBe(412);
    expect(stale.outcome.issue[0].code).toBe('conflict');

    expect((await client.vread({ resourceType: 'Patient', id: created.id, version: '1' }) as any).birthDate).toBe('1815-12-10');
    expect((await client.vread({ resourceType: 'Patient', id: created.id, version: '2' }) as any).birthDate).toBe('1816-01-01');
    expect((await failure(client.vread({ resourceType: 'Patient', id: created.id, version: '3' }))).status).toBe(404);
  });

  it('honours Prefer: return=minimal', async () => {
    const response = await fetch(`${base}/Patient`, {
      method: 'POST',
      headers: { ...mainHeaders, 'content-type': 'application/fhir+json', prefer: 'return=minimal' },
      body: JSON.stringify(newPatient()),
    });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe('');
    expect(response.headers.get('location')).toMatch(/\/Patient\/.+\/_history\/1$/);
  });

  it('creates conditionally: no match creates, one match answers it with 200, several 412', async () => {
    const body = newPatient();
    const condition = `identifier=${body.identifier[0]!.system}|${body.identifier[0]!.value}`;
    const first = await client.create({ resourceType: 'Patient', body, options: { headers: { 'If-None-Exist': condition } } }) as any;
    expect(responseOf(first).status).toBe(201);
    const again = await client.create({ resourceType: 'Patient', body, options: { headers: { 'If-None-Exist': condition } } }) as any;
    expect(responseOf(again).status).toBe(200);
    expect(again.id).toBe(first.id);

    const shared = { system: 'urn:test:family', value: `F-${Date.now()}` };
    await client.create({ resourceType: 'Patient', body: newPatient({ identifier: [shared] }) });
    await client.create({ resourceType: 'Patient', body: newPatient({ identifier: [shared] }) });
    const several = await failure(client.create({ resourceType: 'Patient', body: newPatient(), options: { headers: { 'If-None-Exist': `identifier=${shared.system}|${shared.value}` } } }));
    expect(several.status).toBe(412);
  });

  it('keeps clinical resources with their patient: create, read, search by patient and subject', async () => {
    const patient = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const observation = expectValid(await client.create({
      resourceType: 'Observation',
      body: { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '29463-7' }] }, subject: { reference: `Patient/${patient.id}` }, effectiveDateTime: '2026-01-02T10:00:00Z', valueQuantity: { value: 70, unit: 'kg' } },
    }));
    const carePlan = expectValid(await client.create({
      resourceType: 'CarePlan',
      body: { resourceType: 'CarePlan', status: 'active', intent: 'plan', subject: { reference: `Patient/${patient.id}` } },
    }));
    expect(expectValid(await client.read({ resourceType: 'Observation', id: observation.id }))).toEqual(observation);
    const byPatient = expectValid(await client.search({ resourceType: 'CarePlan', searchParams: { patient: `Patient/${patient.id}` } }));
    expect(byPatient.entry.map((e: any) => e.resource.id)).toEqual([carePlan.id]);
    const byCode = expectValid(await client.search({ resourceType: 'Observation', searchParams: { subject: `Patient/${patient.id}`, code: 'http://loinc.org|29463-7', date: 'ge2026-01' } }));
    expect(byCode.total).toBe(1);
    expect((await client.search({ resourceType: 'Observation', searchParams: { subject: `Patient/${patient.id}`, date: 'lt2026' } }) as any).total).toBe(0);

    for (const type of ['DiagnosticReport', 'MedicationRequest']) {
      const body = type === 'DiagnosticReport'
        ? { resourceType: type, status: 'final', code: { text: 'CBC' }, subject: { reference: `Patient/${patient.id}` } }
        : { resourceType: type, status: 'active', intent: 'order', medicationCodeableConcept: { text: 'Metformin' }, subject: { reference: `Patient/${patient.id}` } };
      const created = expectValid(await client.create({ resourceType: type, body }));
      expect((await client.search({ resourceType: type, searchParams: { patient: patient.id, status: body.status } }) as any).entry[0].resource.id).toBe(created.id);
    }
  });
});
