// Read (src/patients/fhir/read.ts): conditional read with If-None-Match (304), and subsets by
// _elements and _summary (src/patients/fhir/subset.ts), tagged SUBSETTED and still valid R4 (every body
// is checked by fhir-api.ts's validating fetch).
import { describe, expect, it } from 'vitest';
import { base, client, failure, mainHeaders, newPatient } from './fhir-api.ts';

const SUBSETTED = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED', display: 'subsetted' };

describe('read', () => {
  it('answers If-None-Match with the current ETag 304 without a body, and a stale one with the resource', async () => {
    const patient = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const read = (ifNoneMatch: string) => fetch(`${base}/Patient/${patient.id}`, { headers: { ...mainHeaders, 'if-none-match': ifNoneMatch } });
    for (const tag of ['W/"1"', '"1"', '*', 'W/"7", W/"1"']) {
      const response = await read(tag);
      expect(response.status, tag).toBe(304);
      expect(response.headers.get('etag')).toBe('W/"1"');
      expect(await response.text()).toBe('');
    }
    await client.update({ resourceType: 'Patient', id: patient.id, body: { ...patient, gender: 'female' } });
    const changed = await read('W/"1"');
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).toBe('W/"2"');
    expect(((await changed.json()) as any).gender).toBe('female');
  });

  it('returns only the _elements asked for, with id, meta and the mandatory elements, tagged SUBSETTED', async () => {
    const patient = (await client.create({ resourceType: 'Patient', body: newPatient({ gender: 'female' }) })) as any;
    const subset = (await client.request(`Patient/${patient.id}?_elements=birthDate,gender`)) as any;
    expect(Object.keys(subset).sort()).toEqual(['birthDate', 'gender', 'id', 'meta', 'resourceType']);
    expect(subset.meta.tag).toEqual([SUBSETTED]);

    const observation = (await client.create({
      resourceType: 'Observation',
      body: { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patient.id}` }, effectiveDateTime: '2026-01-02T10:00:00Z', valueQuantity: { value: 70, unit: 'kg' }, note: [{ text: 'after lunch' }] },
    })) as any;
    const effective = (await (await fetch(`${base}/Observation/${observation.id}?_elements=effective`, { headers: mainHeaders })).json()) as any;
    // A choice element is named without its type; status and code are mandatory and always kept.
    expect(Object.keys(effective).sort()).toEqual(['code', 'effectiveDateTime', 'id', 'meta', 'resourceType', 'status']);
    const summary = (await (await fetch(`${base}/Observation/${observation.id}?_summary=true`, { headers: mainHeaders })).json()) as any;
    expect(summary).toMatchObject({ subject: observation.subject, valueQuantity: observation.valueQuantity, effectiveDateTime: observation.effectiveDateTime });
    expect(summary.note).toBeUndefined();
    expect(summary.meta.tag).toEqual([SUBSETTED]);
    const data = (await (await fetch(`${base}/Observation/${observation.id}?_summary=data`, { headers: mainHeaders })).json()) as any;
    expect(data.note).toEqual(observation.note);
    const whole = (await (await fetch(`${base}/Observation/${observation.id}?_summary=false`, { headers: mainHeaders })).json()) as any;
    expect(whole).toEqual(observation);
  });

  it('refuses an element the type does not have, _summary=count and _elements with _summary, as 400 invalid', async () => {
    const patient = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    for (const query of ['_elements=shoeSize', '_summary=count', '_summary=true&_elements=gender', '_summary=everything']) {
      const { status, outcome } = await failure(client.request(`Patient/${patient.id}?${query}`));
      expect({ status, code: outcome.issue[0].code }, query).toEqual({ status: 400, code: 'invalid' });
    }
  });
});
