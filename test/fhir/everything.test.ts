// Patient/{id}/$everything (src/patients/fhir/everything.ts): the Patient first, then its compartment
// by type and id, paged by next links to the end; _type, _since and _count; a PATIENT session only for
// itself; another employer's patient 404. fhir-kit-client's operation call and nextPage drive it.
import { describe, expect, it } from 'vitest';
import { base, failure, newEmployerClient, newPatient, otherClient, patientSessionHeaders } from './fhir-api.ts';

describe('Patient/$everything', () => {
  it('pages through the Patient and every resource of its compartment, and nothing of another patient', async () => {
    const { client } = await newEmployerClient();
    const ada = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const bob = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const created: string[] = [`Patient/${ada.id}`];
    for (const text of ['weight', 'height', 'bmi']) {
      const observation = (await client.create({ resourceType: 'Observation', body: { resourceType: 'Observation', status: 'final', code: { text }, subject: { reference: `Patient/${ada.id}` } } })) as any;
      created.push(`Observation/${observation.id}`);
    }
    const plan = (await client.create({ resourceType: 'CarePlan', body: { resourceType: 'CarePlan', status: 'active', intent: 'plan', subject: { reference: `Patient/${ada.id}` } } })) as any;
    created.push(`CarePlan/${plan.id}`);
    await client.create({ resourceType: 'Observation', body: { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${bob.id}` } } });

    let bundle = (await client.operation({ name: '$everything', resourceType: 'Patient', id: ada.id, method: 'GET', input: { _count: 2 } } as never)) as any;
    const seen: string[] = [];
    for (;;) {
      expect(bundle.total).toBe(5);
      seen.push(...bundle.entry.map((entry: any) => `${entry.resource.resourceType}/${entry.resource.id}`));
      if (!bundle.link.some((link: any) => link.relation === 'next')) break;
      bundle = await client.nextPage({ bundle });
    }
    expect(seen[0]).toBe(`Patient/${ada.id}`);
    expect(seen.slice(1)).toEqual([...created.slice(1)].sort());
    expect([...seen].sort()).toEqual([...created].sort());
  });

  it('takes _type and _since, and refuses what it cannot read with 400 invalid', async () => {
    const { client, headers } = await newEmployerClient();
    const ada = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const first = (await client.create({ resourceType: 'Observation', body: { resourceType: 'Observation', status: 'final', code: { text: 'first' }, subject: { reference: `Patient/${ada.id}` } } })) as any;
    const later = (await client.create({ resourceType: 'Observation', body: { resourceType: 'Observation', status: 'final', code: { text: 'later' }, subject: { reference: `Patient/${ada.id}` } } })) as any;
    const everything = async (query: string) => (await (await fetch(`${base}/Patient/${ada.id}/$everything?${query}`, { headers })).json()) as any;
    const ids = (bundle: any) => (bundle.entry ?? []).map((entry: any) => entry.resource.id);
    expect(ids(await everything('_type=Observation')).sort()).toEqual([first.id, later.id].sort());
    expect(ids(await everything(`_since=${encodeURIComponent(first.meta.lastUpdated)}`))).toEqual([later.id]);
    expect(ids(await everything('_type=CarePlan'))).toEqual([]);
    for (const query of ['_type=Spaceship', '_since=yesterday', '_count=-1', '_cursor=made-up']) {
      const response = await fetch(`${base}/Patient/${ada.id}/$everything?${query}`, { headers });
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as any).issue[0].code, query).toBe('invalid');
    }
  });

  it('answers a PATIENT session for itself only, and another employer 404', async () => {
    const { client, employerId } = await newEmployerClient();
    const ada = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const bob = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const headers = await patientSessionHeaders(employerId, ada.telecom[0].value);
    const own = await fetch(`${base}/Patient/${ada.id}/$everything`, { headers });
    expect(((await own.json()) as any).entry.map((entry: any) => entry.resource.id)).toEqual([ada.id]);
    const others = await fetch(`${base}/Patient/${bob.id}/$everything`, { headers });
    expect(others.status).toBe(404);
    const theirs = await failure(otherClient.operation({ name: '$everything', resourceType: 'Patient', id: ada.id, method: 'GET' } as never));
    expect(theirs.status).toBe(404);
  });
});
