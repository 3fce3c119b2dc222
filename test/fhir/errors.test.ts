// FHIR errors (src/patients/fhir/outcome.ts, routes.ts, validate.ts): OperationOutcomes with the
// documented issue codes, date search values, prototype-named elements, another employer's subject,
// JSON only.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fhirDateText } from '../support/dates.ts';
import { FUZZ_SEED } from '../support/openapi-fuzz.ts';
import { client, otherClient, readOnlyClient, base, mainHeaders, expectValid, failure, newPatient } from './fhir-api.ts';

describe('errors', () => {
  it('answers OperationOutcomes with the documented issue codes', async () => {
    const created = await client.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const cases: [() => Promise<unknown>, number, string][] = [
      [() => client.read({ resourceType: 'Spaceship', id: 'x' }), 400, 'invalid'],
      [() => client.search({ resourceType: 'Patient', searchParams: { shoeSize: '42' } }), 400, 'invalid'],
      [() => client.search({ resourceType: 'Patient', searchParams: { birthdate: 'yesterday' } }), 400, 'invalid'],
      [() => client.search({ resourceType: 'Patient', searchParams: { _cursor: 'made-up' } }), 400, 'invalid'],
      [() => client.create({ resourceType: 'Patient', body: { resourceType: 'Patient', birthDate: 'not-a-date' } }), 400, 'invalid'],
      [() => client.create({ resourceType: 'Patient', body: { resourceType: 'Observation', status: 'final', code: { text: 'x' } } }), 400, 'invalid'],
      [() => client.create({ resourceType: 'Observation', body: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/unknown' } } }), 400, 'invalid'],
      [() => client.read({ resourceType: 'Patient', id: 'unknown' }), 404, 'not-found'],
      [() => otherClient.read({ resourceType: 'Patient', id: created.id }), 404, 'not-found'],
      [() => client.update({ resourceType: 'Patient', id: 'unknown', body: newPatient() }), 404, 'not-found'],
      [() => client.create({ resourceType: 'Patient', body: newPatient({ telecom: created.telecom }) }), 409, 'duplicate'],
      [() => readOnlyClient.create({ resourceType: 'Patient', body: newPatient() }), 403, 'forbidden'],
    ];
    for (const [call, status, code] of cases) {
      const { status: actual, outcome } = await failure(call());
      expect({ actual, code: outcome.issue[0].code }).toEqual({ actual: status, code });
    }
    const invalid = await failure(client.create({ resourceType: 'Patient', body: { resourceType: 'Patient', birthDate: 'not-a-date', shoeSize: 42 } }));
    expect(invalid.outcome.issue.length).toBe(2);
  });

  it('answers the date search values of issue 20 that were 500s (_lastUpdated=0000) with 400 invalid, and takes the first and last years', async () => {
    const search = (query: string) => fetch(`${base}/Patient?${query}`, { headers: mainHeaders });
    const cursor = (at: string) => Buffer.from(JSON.stringify(['n', at, 'x'])).toString('base64url');
    const refused = ['_lastUpdated=0000', '_lastUpdated=0000-12-31', '_lastUpdated=ge2024-02-30', '_lastUpdated=2024-13', '_lastUpdated=lt2024-01-01T24:00',
      `_lastUpdated=${encodeURIComponent('le2024-01-01T10:00:00+16:00')}`, `_lastUpdated=${encodeURIComponent('le9999-12-31T23:59:59-10:00')}`, 'birthdate=0000', `_cursor=${cursor('0000-01-01 00:00:00+00')}`, `_cursor=${cursor('1')}`];
    for (const query of refused) {
      const response = await search(query);
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as any).issue[0].code, query).toBe('invalid');
    }
    for (const query of ['_lastUpdated=0001', '_lastUpdated=9999', '_lastUpdated=gt9999', `_lastUpdated=${encodeURIComponent('le9999-12-31T23:59:59Z')}`, 'birthdate=ge0001-01-01']) {
      const response = await search(query);
      expect(response.status, query).toBe(200);
      expectValid(await response.json());
    }
  });

  it('answers every date search value with a searchset or 400 invalid, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('_lastUpdated', 'birthdate'), fhirDateText, async (name, value) => {
        const response = await fetch(`${base}/Patient?${name}=${encodeURIComponent(value)}&_count=1`, { headers: mainHeaders });
        const body = (await response.json()) as any;
        expect([200, 400], `${name}=${value}`).toContain(response.status);
        expect(body.resourceType).toBe(response.status === 200 ? 'Bundle' : 'OperationOutcome');
      }),
      { seed: FUZZ_SEED, numRuns: 200 },
    );
  });

  it('refuses a Patient with an element named after an Object.prototype member, at any depth, as it refuses foo (issue 20: constructor, toString and valueOf were stored)', async () => {
    const identifier = `M-prototype-${Date.now()}`;
    const elements: [string, unknown][] = [
      ['constructor', { x: 1 }], ['toString', 'x'], ['valueOf', 1], ['hasOwnProperty', true], ['foo', 'x'],
    ];
    for (const [name, value] of elements) {
      for (const resource of [{ [name]: value }, { name: [{ family: 'Lovelace', [name]: value }] }, { identifier: [{ value: identifier, period: { start: '2024-01-01', [name]: value } }] }]) {
        const body = JSON.stringify({ ...newPatient(), identifier: [{ system: 'urn:test:member', value: identifier }], ...resource });
        const response = await fetch(`${base}/Patient`, { method: 'POST', headers: { ...mainHeaders, 'content-type': 'application/fhir+json' }, body });
        expect(response.status, body).toBe(400);
        expect(((await response.json()) as any).issue[0].code, body).toBe('invalid');
      }
    }
    expect((await client.search({ resourceType: 'Patient', searchParams: { identifier } }) as any).total).toBe(0);
  });

  it('refuses another employer\'s patient as a subject and never shows it in searches', async () => {
    const theirs = await otherClient.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const refused = await failure(client.create({ resourceType: 'CarePlan', body: { resourceType: 'CarePlan', status: 'active', intent: 'plan', subject: { reference: `Patient/${theirs.id}` } } }));
    expect(refused.status).toBe(400);
    expect((await client.search({ resourceType: 'Patient', searchParams: { _id: theirs.id } }) as any).total).toBe(0);
    expect((await client.search({ resourceType: 'Patient', searchParams: { email: theirs.telecom[0].value } }) as any).total).toBe(0);
  });

  it('speaks JSON only: XML Accept is 406, an XML body 415, both as OperationOutcome', async () => {
    const headers = mainHeaders;
    const accept = await fetch(`${base}/Patient`, { headers: { ...headers, accept: 'application/fhir+xml' } });
    expect(accept.status).toBe(406);
    expect(((await accept.json()) as any).issue[0].code).toBe('not-supported');
    const format = await fetch(`${base}/Patient?_format=xml`, { headers });
    expect(format.status).toBe(406);
    const json = await fetch(`${base}/Patient?_format=json&_count=1`, { headers: { ...headers, accept: 'application/json' } });
    expect(json.status).toBe(200);
    const body = await fetch(`${base}/Patient`, { method: 'POST', headers: { ...headers, 'content-type': 'application/fhir+xml' }, body: '<Patient xmlns="http://hl7.org/fhir"/>' });
    expect(body.status).toBe(415);
    expect(((await body.json()) as any).resourceType).toBe('OperationOutcome');
  });
});
