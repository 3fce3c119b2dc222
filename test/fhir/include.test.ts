// _include and _revinclude on search (projections/fhir-resources/search.ts runInclusions): the
// Patients the matches reference, or the resources referencing the matched Patients, as entries with
// search.mode include; within the employer and a PATIENT session's compartment; _elements and
// _summary cut down the matches only.
import { describe, expect, it } from 'vitest';
import { base, failure, newEmployerClient, newPatient, otherClient, patientSessionHeaders } from './fhir-api.ts';

const observationOf = (patientId: string, text: string) => ({ resourceType: 'Observation', status: 'final', code: { text }, subject: { reference: `Patient/${patientId}` } });
const entries = (bundle: any) => (bundle.entry ?? []).map((entry: any) => `${entry.search.mode} ${entry.resource.resourceType}/${entry.resource.id}`).sort();

describe('_include and _revinclude', () => {
  it('includes the Patients of the matched Observations (each once) and, searching Patients, the Observations that reference them', async () => {
    const { client } = await newEmployerClient();
    const ada = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const bob = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const adaWeight = (await client.create({ resourceType: 'Observation', body: observationOf(ada.id, 'weight') })) as any;
    const adaHeight = (await client.create({ resourceType: 'Observation', body: observationOf(ada.id, 'height') })) as any;
    const bobWeight = (await client.create({ resourceType: 'Observation', body: observationOf(bob.id, 'weight') })) as any;

    const withSubjects = (await client.search({ resourceType: 'Observation', searchParams: { _include: 'Observation:subject' } })) as any;
    expect(withSubjects.total).toBe(3);
    expect(entries(withSubjects)).toEqual([`include Patient/${ada.id}`, `include Patient/${bob.id}`, `match Observation/${adaHeight.id}`, `match Observation/${adaWeight.id}`, `match Observation/${bobWeight.id}`].sort());
    const onePage = (await client.search({ resourceType: 'Observation', searchParams: { _include: 'Observation:patient:Patient', _count: 1 } })) as any;
    expect(entries(onePage)).toEqual([`include Patient/${ada.id}`, `match Observation/${adaWeight.id}`]);
    // The next link carries _include.
    expect(entries(await client.nextPage({ bundle: onePage }))).toEqual([`include Patient/${ada.id}`, `match Observation/${adaHeight.id}`]);

    const withObservations = (await client.search({ resourceType: 'Patient', searchParams: { _id: ada.id, _revinclude: 'Observation:subject' } })) as any;
    expect(entries(withObservations)).toEqual([`include Observation/${adaHeight.id}`, `include Observation/${adaWeight.id}`, `match Patient/${ada.id}`].sort());
    expect(withObservations.total).toBe(1);
    const iterated = (await client.search({ resourceType: 'Patient', searchParams: { _id: bob.id, '_revinclude:iterate': 'Observation:patient' } })) as any;
    expect(entries(iterated)).toEqual([`include Observation/${bobWeight.id}`, `match Patient/${bob.id}`]);
  });

  it('cuts down only the matches with _elements and _summary; _summary=count gives the total only', async () => {
    const { client } = await newEmployerClient();
    const ada = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    await client.create({ resourceType: 'Observation', body: observationOf(ada.id, 'weight') });
    const bundle = (await client.search({ resourceType: 'Observation', searchParams: { _include: 'Observation:subject', _elements: 'subject' } })) as any;
    const [match, included] = [bundle.entry.find((e: any) => e.search.mode === 'match').resource, bundle.entry.find((e: any) => e.search.mode === 'include').resource];
    expect(Object.keys(match).sort()).toEqual(['code', 'id', 'meta', 'resourceType', 'status', 'subject']);
    expect(match.meta.tag[0].code).toBe('SUBSETTED');
    expect(included).toEqual(ada);
    const summary = (await client.search({ resourceType: 'Patient', searchParams: { _summary: 'true' } })) as any;
    expect(summary.entry[0].resource.telecom).toEqual(ada.telecom);
    expect(summary.entry[0].resource.meta.tag[0].code).toBe('SUBSETTED');
    const count = (await client.search({ resourceType: 'Observation', searchParams: { _summary: 'count' } })) as any;
    expect(count.total).toBe(1);
    expect(count.entry).toBeUndefined();
  });

  it('includes nothing of another employer nor, for a PATIENT session, outside its compartment', async () => {
    const { client, employerId } = await newEmployerClient();
    const ada = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const bob = (await client.create({ resourceType: 'Patient', body: newPatient() })) as any;
    const adaWeight = (await client.create({ resourceType: 'Observation', body: observationOf(ada.id, 'weight') })) as any;
    await client.create({ resourceType: 'Observation', body: observationOf(bob.id, 'weight') });
    const theirs = (await otherClient.search({ resourceType: 'Patient', searchParams: { _revinclude: 'Observation:subject' } })) as any;
    expect(entries(theirs).filter((entry: string) => entry.includes(adaWeight.id) || entry.includes(ada.id))).toEqual([]);

    const headers = await patientSessionHeaders(employerId, ada.telecom[0].value);
    const own = (await (await fetch(`${base}/Observation?_include=Observation:subject`, { headers })).json()) as any;
    expect(entries(own)).toEqual([`include Patient/${ada.id}`, `match Observation/${adaWeight.id}`]);
    const revincluded = (await (await fetch(`${base}/Patient?_revinclude=Observation:subject`, { headers })).json()) as any;
    expect(entries(revincluded)).toEqual([`include Observation/${adaWeight.id}`, `match Patient/${ada.id}`]);
  });

  it('refuses an _include or _revinclude it does not serve with 400 invalid, naming those it serves', async () => {
    const { client } = await newEmployerClient();
    const refused: [string, Record<string, string>][] = [
      ['Patient', { _include: 'Observation:subject' }],
      ['Observation', { _include: 'Observation:code' }],
      ['Observation', { _include: 'Observation:subject:Group' }],
      ['Observation', { _revinclude: 'Observation:subject' }],
    ];
    for (const [resourceType, searchParams] of refused) {
      const { status, outcome } = await failure(client.search({ resourceType, searchParams }));
      expect({ status, code: outcome.issue[0].code }, JSON.stringify(searchParams)).toEqual({ status: 400, code: 'invalid' });
    }
    const { outcome } = await failure(client.search({ resourceType: 'Observation', searchParams: { _include: 'Observation:code' } }));
    expect(outcome.issue[0].diagnostics).toContain('Observation:subject, Observation:patient');
  });
});
