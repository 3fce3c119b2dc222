// The FHIR API driven by fhir-kit-client (a client nobody here wrote) against the real service: metadata,
// create, conditional create, read, vread, update with a stale ETag, search paged through nextPage to
// the end, and the error cases. Every resource returned is checked by the R4 validator.
import fc from 'fast-check';
import { Client, RESPONSE_KEY } from 'fhir-kit-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validationIssues } from '../../src/patients/fhir/validate.ts';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { fhirDateText } from '../support/dates.ts';
import { FUZZ_SEED } from '../support/openapi-fuzz.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let client: Client;
let otherClient: Client;
let readOnlyClient: Client;
let base: string;
/** The headers of `client` (its API key), for calls made with plain fetch. */
let mainHeaders: Record<string, string>;

async function clientFor(scopes: ('fhir:read' | 'fhir:write')[]) {
  const tenant = await service.createTenant();
  const { rawKey } = await createApiKey(service, tenant, { scopes, rateLimitPerMinute: 100_000 });
  return { client: new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) }), headers: keyHeaders(rawKey) };
}

beforeAll(async () => {
  service = await startTestService({ env: { FHIR_RATE_LIMIT_PER_MIN: '100000' } });
  base = `${service.url}/api/fhir`;
  ({ client, headers: mainHeaders } = await clientFor(['fhir:read', 'fhir:write']));
  ({ client: otherClient } = await clientFor(['fhir:read', 'fhir:write']));
  const tenant = await service.createTenant();
  const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
  readOnlyClient = new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) });
});
afterAll(async () => {
  await service?.stop();
});

/** The response behind a fhir-kit-client result (headers, status). */
const responseOf = (result: unknown) => (result as Record<string, Response>)[RESPONSE_KEY]!;

function expectValid(resource: unknown) {
  expect(validationIssues(resource)).toEqual([]);
  return resource as any;
}

/** The status and OperationOutcome of a call that must fail. */
async function failure(call: Promise<unknown>): Promise<{ status: number; outcome: any }> {
  const error = (await call.then(() => null, (thrown) => thrown)) as { response?: { status: number; data: any } } | null;
  if (!error?.response) throw new Error('the call succeeded');
  expect(error.response.data.resourceType).toBe('OperationOutcome');
  expectValid(error.response.data);
  return { status: error.response.status, outcome: error.response.data };
}

let counter = 0;
const newPatient = (extra: Record<string, unknown> = {}) => {
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

describe('metadata', () => {
  it('is a valid R4 CapabilityStatement with every type, its interactions and search parameters, and an ETag', async () => {
    const statement = expectValid(await client.capabilityStatement());
    expect(statement).toMatchObject({ resourceType: 'CapabilityStatement', status: 'active', kind: 'instance', fhirVersion: '4.0.1' });
    expect(statement.format).toContain('application/fhir+json');
    expect(statement.implementation.url).toBe(base);
    const types = statement.rest[0].resource.map((resource: any) => resource.type);
    expect(types).toEqual(['Patient', 'CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest']);
    const patient = statement.rest[0].resource[0];
    expect(patient.interaction.map((i: any) => i.code)).toEqual(['read', 'vread', 'update', 'create', 'search-type']);
    expect(patient.searchParam.map((p: any) => p.name)).toEqual(expect.arrayContaining(['email', 'identifier', 'name', 'family', 'given', 'birthdate', '_id', '_lastUpdated']));
    expect(responseOf(statement).headers.get('etag')).toMatch(/^W\/".+"$/);
    expect(responseOf(statement).headers.get('content-type')).toContain('application/fhir+json');
  });
});

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

describe('search', () => {
  it('pages through nextPage to the end by keyset, every resource once, totals and links on each page', async () => {
    const family = `Paged${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await client.create({ resourceType: 'Patient', body: newPatient({ name: [{ family, given: [`G${i}`] }] }) }) as any).id);

    let bundle = expectValid(await client.search({ resourceType: 'Patient', searchParams: { family: family.toLowerCase(), _count: 3 } }));
    const seen: string[] = [];
    const pages: any[] = [];
    for (;;) {
      pages.push(bundle);
      expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 7 });
      expect(bundle.link.find((l: any) => l.relation === 'self')).toBeDefined();
      for (const entry of bundle.entry) {
        expect(entry.search.mode).toBe('match');
        expect(entry.fullUrl).toBe(`${base}/Patient/${entry.resource.id}`);
        seen.push(entry.resource.id);
      }
      const next = bundle.link.find((l: any) => l.relation === 'next');
      if (!next) break;
      // Paging state is in the query string of [base]/Patient.
      expect(next.url.startsWith(`${base}/Patient?`)).toBe(true);
      bundle = expectValid(await client.nextPage({ bundle }));
    }
    expect(pages.map((page) => page.entry.length)).toEqual([3, 3, 1]);
    expect(seen).toEqual(ids);
    const back = expectValid(await client.prevPage({ bundle: pages[2] }));
    expect(back.entry.map((e: any) => e.resource.id)).toEqual(ids.slice(3, 6));

    const newestFirst = expectValid(await client.search({ resourceType: 'Patient', searchParams: { family, _sort: '-_lastUpdated', _count: 10 } }));
    expect(newestFirst.entry.map((e: any) => e.resource.id)).toEqual([...ids].reverse());
  });

  it('finds by e-mail (any case), identifier, name, given, birthdate, _id, _lastUpdated; _count=0 gives the total only; POST _search', async () => {
    const body = newPatient({ birthDate: '1990-04-05' });
    const created = await client.create({ resourceType: 'Patient', body }) as any;
    const email = (body.telecom as { value: string }[])[0]!.value.toUpperCase();
    const only = async (searchParams: Record<string, string>) => {
      const bundle = expectValid(await client.search({ resourceType: 'Patient', searchParams }));
      return (bundle.entry ?? []).map((e: any) => e.resource.id);
    };
    expect(await only({ email })).toEqual([created.id]);
    expect(await only({ identifier: body.identifier[0]!.value })).toEqual([created.id]);
    expect(await only({ name: (body.name as { family: string }[])[0]!.family.slice(0, 6), _id: created.id })).toEqual([created.id]);
    expect(await only({ given: 'ad', _id: created.id })).toEqual([created.id]);
    expect(await only({ birthdate: '1990-04', _id: created.id })).toEqual([created.id]);
    expect(await only({ birthdate: 'gt1990-04-05', _id: created.id })).toEqual([]);
    expect(await only({ _lastUpdated: `ge${created.meta.lastUpdated.slice(0, 10)}`, _id: created.id })).toEqual([created.id]);
    const totalOnly = expectValid(await client.search({ resourceType: 'Patient', searchParams: { email, _count: 0 } }));
    expect(totalOnly.total).toBe(1);
    expect(totalOnly.entry).toBeUndefined();
    const posted = expectValid(await client.search({ resourceType: 'Patient', searchParams: { email }, options: { postSearch: true } } as never));
    expect(posted.entry.map((e: any) => e.resource.id)).toEqual([created.id]);
  });

  it('caps _count at 1000', async () => {
    const bundle = expectValid(await client.search({ resourceType: 'Patient', searchParams: { _count: 5000 } }));
    expect(bundle.link[0].url).toContain('_count=1000');
  });
});

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

describe('a PATIENT session', () => {
  it('reads only its own compartment: its Patient (by its user\'s e-mail) and what references it; writes nothing', async () => {
    const tenant = await service.createTenant();
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write'] });
    const admin = new Client({ baseUrl: base, customHeaders: keyHeaders(rawKey) });
    const own = await admin.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const other = await admin.create({ resourceType: 'Patient', body: newPatient() }) as any;
    const observation = (patient: any) => ({ resourceType: 'Observation', status: 'final', code: { text: 'BMI' }, subject: { reference: `Patient/${patient.id}` } });
    const ownObservation = await admin.create({ resourceType: 'Observation', body: observation(own) }) as any;
    const otherObservation = await admin.create({ resourceType: 'Observation', body: observation(other) }) as any;

    const session = async (email: string) => {
      const { userId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
        employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim',
        profile: { email, userName: email, givenName: null, familyName: null, displayName: null, externalId: null },
      });
      return service.sessionHeaders(await service.signIn(tenant.employerId, userId));
    };
    const headers = await session(own.telecom[0].value.toUpperCase());
    const get = async (path: string) => {
      const response = await fetch(`${base}/${path}`, { headers });
      return { status: response.status, body: (await response.json()) as any };
    };
    expect((await get(`Patient/${own.id}`)).status).toBe(200);
    expect((await get(`Observation/${ownObservation.id}`)).status).toBe(200);
    expect((await get(`Patient/${other.id}`)).status).toBe(404);
    expect((await get(`Observation/${otherObservation.id}`)).status).toBe(404);
    expect((await get('Observation')).body.entry.map((e: any) => e.resource.id)).toEqual([ownObservation.id]);
    expect((await get('Patient')).body.entry.map((e: any) => e.resource.id)).toEqual([own.id]);
    const write = await fetch(`${base}/Patient`, { method: 'POST', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(newPatient()) });
    expect(write.status).toBe(403);
    expect(((await write.json()) as any).issue[0].code).toBe('forbidden');

    const stranger = await session(`nobody.${Date.now()}@example.test`);
    const none = await fetch(`${base}/Patient`, { headers: stranger });
    expect(((await none.json()) as any).total).toBe(0);
  });
});

describe('rate limit', () => {
  it('answers 429 throttled with Retry-After past 120 requests a minute per employer', async () => {
    const limited = await startTestService();
    try {
      const tenant = await limited.createTenant();
      const { rawKey } = await createApiKey(limited, tenant, { scopes: ['fhir:read'], rateLimitPerMinute: 100_000 });
      const started = Date.now();
      let allowed = 0;
      let last: Response | null = null;
      // 120 at once, then 2 a second (a token bucket): the first 429 comes after 120 plus what refilled meanwhile.
      while (allowed < 400) {
        last = await fetch(`${limited.url}/api/fhir/metadata`, { headers: keyHeaders(rawKey) });
        if (last.status !== 200) break;
        await last.arrayBuffer();
        allowed += 1;
      }
      expect(last!.status).toBe(429);
      expect(allowed).toBeGreaterThanOrEqual(120);
      expect(allowed).toBeLessThanOrEqual(120 + Math.ceil(((Date.now() - started) / 1000) * 2));
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await last!.json()) as any).issue[0].code).toBe('throttled');
    } finally {
      await limited.stop();
    }
  });
});
