// FHIR Bulk Data driven as a client would (plain fetch): kick-off (system, patient and group level) by
// POST Parameters and by GET query, polling, the manifest, NDJSON downloads whose every line is a valid
// R4 resource (test/support/fhir-validate.ts) (no erased patient, no duplicate, a group's only its cohort's), 400 for what is
// unsupported, 429 while one runs, 500 once one failed, cancel, 404 for another employer, and 403 for a
// PATIENT session.
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertExport, markFailed } from '../../src/exports/store.ts';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { expectValidFhir, validateFhirResponses } from '../support/fhir-validate.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { waitUntil } from '../webhooks/helpers.ts';
import { exportTenant, rosterOf, uploadPatients, type ExportTenant } from './helpers.ts';

let service: TestService;
let stop: () => Promise<void>;
let stopValidating: (() => void) | undefined;
beforeAll(async () => {
  ({ service, stop } = await startServiceWithReceiver());
  // Every FHIR body under /api/fhir (OperationOutcomes; a manifest is no resource) is checked by both R4 validators.
  stopValidating = validateFhirResponses(`${service.url}/api/fhir`);
});
afterAll(async () => {
  stopValidating?.();
  await stop?.();
});

const async = { prefer: 'respond-async', accept: 'application/fhir+json' };

async function kickOff(tenant: ExportTenant, path: string, init: RequestInit = {}) {
  const response = await tenant.fetch(`/api/fhir${path}`, { ...init, headers: { ...async, ...(init.headers as Record<string, string>) } });
  expect(response.status).toBe(202);
  const location = response.headers.get('content-location')!;
  expect(location).toMatch(new RegExp(`^${service.url}/api/fhir/bulk-export/[0-9a-f-]{36}$`));
  return location.slice(service.url.length);
}

async function manifestOf(tenant: ExportTenant, statusPath: string) {
  return waitUntil('the bulk export', async () => {
    const polled = await tenant.fetch(statusPath);
    if (polled.status === 202) {
      expect(polled.headers.get('x-progress')).toMatch(/^\d{1,3}%$/);
      expect(polled.headers.get('retry-after')).toBe('2');
      return false;
    }
    expect(polled.status).toBe(200);
    expect(polled.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Date.parse(polled.headers.get('expires')!)).toBeGreaterThan(Date.now());
    return (await polled.json()) as any;
  });
}

async function linesOf(tenant: ExportTenant, url: string): Promise<any[]> {
  const file = await tenant.fetch(url.slice(service.url.length));
  expect(file.status).toBe(200);
  expect(file.headers.get('content-type')).toMatch(/^application\/fhir\+ndjson/);
  const text = await file.text();
  expect(text.endsWith('\n')).toBe(true);
  return text.trimEnd().split('\n').map((line) => JSON.parse(line));
}

async function observationFor(tenant: ExportTenant, patientId: string, code = '29463-7') {
  const created = await tenant.fetch('/api/fhir/Observation', {
    method: 'POST',
    headers: { 'content-type': 'application/fhir+json' },
    body: JSON.stringify({ resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code }] }, subject: { reference: `Patient/${patientId}` }, valueQuantity: { value: 70, unit: 'kg' } }),
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as any).id as string;
}

describe('FHIR Bulk Data export', () => {
  it('kicks off, reports progress, and serves a manifest of valid NDJSON files without erased patients', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, Array.from({ length: 1_234 }, (_, i) => ({ email: `bulk.${i}@example.test`, firstName: `First${i}`, lastName: `Last${i}` })));
    const [erased, kept] = await rosterOf(tenant.api);
    const observations = [await observationFor(tenant, kept.id), await observationFor(tenant, kept.id), await observationFor(tenant, erased.id)];
    expect((await tenant.api.delete(`/api/employer/patients/${erased.id}/personal-data`)).status).toBe(200);

    const statusPath = await kickOff(tenant, '/$export', {
      method: 'POST',
      headers: { 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: '_type', valueString: 'Observation,Patient' }, { name: '_outputFormat', valueString: 'application/fhir+ndjson' }] }),
    });
    const manifest = await manifestOf(tenant, statusPath);
    expect(manifest).toMatchObject({ transactionTime: expect.any(String), request: `${service.url}/api/fhir/$export`, requiresAccessToken: true, error: [] });
    expect(manifest.output.map((file: any) => [file.type, file.count])).toEqual([['Patient', 1_233], ['Observation', 2]]);

    const patients = await linesOf(tenant, manifest.output[0].url);
    const exportedObservations = await linesOf(tenant, manifest.output[1].url);
    for (const resource of [...patients, ...exportedObservations]) expectValidFhir(resource);
    const roster = await rosterOf(tenant.api);
    expect(patients.map((p) => p.id).sort()).toEqual(roster.map((p) => p.id).sort());
    expect(patients.some((p) => p.id === erased.id)).toBe(false);
    expect(exportedObservations.map((o) => o.id).sort()).toEqual(observations.slice(0, 2).sort());
  });

  it('takes its parameters from the query of a GET kick-off, honours _since, and refuses what it does not support with an OperationOutcome', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, [{ email: 'since@example.test', firstName: 'Since', lastName: 'Patient' }]);
    const statusPath = await kickOff(tenant, `/Patient/$export?_type=Patient&_outputFormat=ndjson&_since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect((await manifestOf(tenant, statusPath)).output).toEqual([]);
    const everything = await manifestOf(tenant, await kickOff(tenant, '/Patient/$export?_type=Patient'));
    expect(everything.output.map((file: any) => file.count)).toEqual([1]);

    for (const [path, headers] of [
      ['/$export?_type=Practitioner', async],
      ['/$export?_outputFormat=text/csv', async],
      ['/$export?_since=yesterday', async],
      ['/$export', { accept: 'application/fhir+json' }],
    ] as const) {
      const refused = await tenant.fetch(`/api/fhir${path}`, { headers });
      expect(refused.status).toBe(400);
      const outcome = (await refused.json()) as any;
      expect(outcome).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'invalid' }] });
    }
  });

  it("exports a cohort's patients and their resources at Group/{cohortId}/$export, and 404 for an unknown or another employer's cohort", async () => {
    const tenant = await exportTenant(service);
    const other = await exportTenant(service);
    const cohort = await uploadPatients(tenant.api, Array.from({ length: 3 }, (_, i) => ({ email: `group.${i}@example.test`, firstName: `Group${i}`, lastName: 'Member' })));
    await uploadPatients(tenant.api, [{ email: 'outside@example.test', firstName: 'Outside', lastName: 'Patient' }]);
    const roster = await rosterOf(tenant.api);
    const members = roster.filter((p) => p.email.startsWith('group.'));
    const outsider = roster.find((p) => p.email === 'outside@example.test');
    const memberObservation = await observationFor(tenant, members[0].id);
    await observationFor(tenant, outsider.id);

    const manifest = await manifestOf(tenant, await kickOff(tenant, `/Group/${cohort}/$export?_type=Patient,Observation`));
    expect(manifest.request).toBe(`${service.url}/api/fhir/Group/${cohort}/$export?_type=Patient,Observation`);
    expect(manifest.output.map((file: any) => [file.type, file.count])).toEqual([['Patient', 3], ['Observation', 1]]);
    const patients = await linesOf(tenant, manifest.output[0].url);
    const observations = await linesOf(tenant, manifest.output[1].url);
    for (const resource of [...patients, ...observations]) expectValidFhir(resource);
    expect(patients.map((p) => p.id).sort()).toEqual(members.map((p) => p.id).sort());
    expect(observations.map((o) => o.id)).toEqual([memberObservation]);

    for (const [caller, path] of [[other, `/Group/${cohort}/$export`], [tenant, '/Group/no-such-cohort/$export']] as const) {
      const refused = await caller.fetch(`/api/fhir${path}`, { method: 'POST', headers: { ...async, 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Parameters' }) });
      expect(refused.status).toBe(404);
      expect(((await refused.json()) as any)).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'not-found' }] });
    }
    expect(await service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM exports WHERE employer_id = ${other.employerId}`)).toBe(0);
  });

  it('limits an export to the patients of `patient`, the searches of `_typeFilter` and the elements of `_elements` (SUBSETTED, still valid R4)', async () => {
    const tenant = await exportTenant(service);
    const cohort = await uploadPatients(tenant.api, Array.from({ length: 3 }, (_, i) => ({ email: `limit.${i}@example.test`, firstName: `Limit${i}`, lastName: 'Patient' })));
    const [ada, bob, cy] = await rosterOf(tenant.api);
    const adaWeight = await observationFor(tenant, ada.id);
    const adaHeight = await observationFor(tenant, ada.id, '8302-2');
    const bobWeight = await observationFor(tenant, bob.id);
    await observationFor(tenant, cy.id);
    const post = (parameter: unknown[]) => ({ method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Parameters', parameter }) });
    const patient = (id: string) => ({ name: 'patient', valueReference: { reference: `Patient/${id}` } });
    const filesOf = async (manifest: any) => Object.fromEntries(await Promise.all(manifest.output.map(async (file: any) => [file.type, (await linesOf(tenant, file.url)).map(expectValidFhir)])));
    const ids = (resources: any[] | undefined) => (resources ?? []).map((resource) => resource.id).sort();

    const two = await filesOf(await manifestOf(tenant, await kickOff(tenant, '/Patient/$export', post([patient(ada.id), patient(bob.id), { name: '_type', valueString: 'Patient,Observation' }]))));
    expect(ids(two.Patient)).toEqual([ada.id, bob.id].sort());
    expect(ids(two.Observation)).toEqual([adaWeight, adaHeight, bobWeight].sort());
    const inGroup = await filesOf(await manifestOf(tenant, await kickOff(tenant, `/Group/${cohort}/$export`, post([patient(cy.id), { name: '_type', valueString: 'Patient' }]))));
    expect(ids(inGroup.Patient)).toEqual([cy.id]);

    const weights = await filesOf(await manifestOf(tenant, await kickOff(tenant, '/Patient/$export', post([
      patient(ada.id), { name: '_type', valueString: 'Observation' },
      { name: '_typeFilter', valueString: 'Observation?code=http://loinc.org|29463-7' }, { name: '_typeFilter', valueString: `Observation?_id=${bobWeight}` },
    ]))));
    expect(ids(weights.Observation)).toEqual([adaWeight]);
    const byQuery = await filesOf(await manifestOf(tenant, await kickOff(tenant, `/$export?_type=Observation&_typeFilter=${encodeURIComponent(`Observation?subject=Patient/${bob.id}`)}`)));
    expect(ids(byQuery.Observation)).toEqual([bobWeight]);

    const subset = await filesOf(await manifestOf(tenant, await kickOff(tenant, '/Patient/$export', post([patient(ada.id), { name: '_type', valueString: 'Patient,Observation' }, { name: '_elements', valueString: 'Patient.birthDate,subject' }]))));
    for (const resource of [...subset.Patient, ...subset.Observation]) expect(resource.meta.tag).toEqual([{ system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED', display: 'subsetted' }]);
    expect(Object.keys(subset.Patient[0]).every((key) => ['resourceType', 'id', 'meta', 'birthDate'].includes(key))).toBe(true);
    expect(Object.keys(subset.Observation[0]).sort()).toEqual(['code', 'id', 'meta', 'resourceType', 'status', 'subject']);
  });

  it('refuses what it cannot honour with 400, and under Prefer: handling=lenient ignores it and says so in the manifest\'s error file', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, [{ email: 'lenient@example.test', firstName: 'Lenient', lastName: 'Patient' }]);
    const refused = [
      '/$export?includeAssociatedData=LatestProvenanceResources',
      `/$export?_typeFilter=${encodeURIComponent('Observation?_count=1')}`,
      `/$export?_typeFilter=${encodeURIComponent('Observation?shoeSize=42')}`,
      `/$export?_type=Patient&_typeFilter=${encodeURIComponent('Observation?status=final')}`,
      '/$export?_elements=shoeSize',
      '/$export?_type=Practitioner,Patient',
    ];
    for (const path of refused) {
      const response = await tenant.fetch(`/api/fhir${path}`, { headers: async });
      expect(response.status, path).toBe(400);
      expect(expectValidFhir(await response.json()).issue[0].code, path).toBe('invalid');
    }
    const systemPatient = await tenant.fetch('/api/fhir/$export', { method: 'POST', headers: { ...async, 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Parameters', parameter: [{ name: 'patient', valueReference: { reference: 'Patient/x' } }] }) });
    expect(systemPatient.status).toBe(400);

    const lenient = { prefer: 'respond-async, handling=lenient' };
    const manifest = await manifestOf(tenant, await kickOff(tenant, `/$export?_type=Patient,Practitioner&_elements=shoeSize&_typeFilter=${encodeURIComponent('Patient?_count=1')}`, { headers: lenient }));
    expect(manifest.output.map((file: any) => [file.type, file.count])).toEqual([['Patient', 1]]);
    expect(manifest.error).toEqual([{ type: 'OperationOutcome', url: expect.stringMatching(/\/files\/OperationOutcome-1\.ndjson$/), count: 3 }]);
    const outcomes = (await linesOf(tenant, manifest.error[0].url)).map(expectValidFhir);
    expect(outcomes.map((outcome) => outcome.issue[0].diagnostics)).toEqual([
      expect.stringContaining('_type Practitioner'), expect.stringContaining('_typeFilter Patient?_count=1'), expect.stringContaining('_elements shoeSize'),
    ]);
    const [patient] = await linesOf(tenant, manifest.output[0].url);
    expect(patient.meta.tag).toBeUndefined();
  });

  it('answers 429 with Retry-After while an export of the employer is in flight', async () => {
    const tenant = await exportTenant(service);
    // An export queued without a job: it stays pending for the length of the test.
    await insertExport(service.ctx.db.slonik, { employerId: tenant.employerId, exportId: 'in-flight', kind: 'fhir', request: { url: '', types: ['Patient'], since: null } });
    const refused = await tenant.fetch('/api/fhir/$export', { headers: async });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as any).issue[0].code).toBe('throttled');
  });

  it('answers the status of a failed export with 500 and an OperationOutcome naming the failure', async () => {
    const tenant = await exportTenant(service);
    await insertExport(service.ctx.db.slonik, { employerId: tenant.employerId, exportId: 'failed', kind: 'fhir', request: { url: '', types: ['Patient'], since: null } });
    await markFailed(service.ctx.db.slonik, tenant.employerId, 'failed', 'The export could not be written.');
    const polled = await tenant.fetch('/api/fhir/bulk-export/failed');
    expect(polled.status).toBe(500);
    expect(polled.headers.get('content-type')).toMatch(/^application\/fhir\+json/);
    expect(await polled.json()).toEqual({ resourceType: 'OperationOutcome', issue: [{ severity: 'fatal', code: 'exception', diagnostics: 'The export could not be written.' }] });
  });

  it('cancels: DELETE answers 202, later polls and downloads 404 with an OperationOutcome', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, [{ email: 'cancel@example.test', firstName: 'Cancel', lastName: 'Patient' }]);
    const statusPath = await kickOff(tenant, '/$export');
    const manifest = await manifestOf(tenant, statusPath);
    expect((await tenant.fetch(statusPath, { method: 'DELETE' })).status).toBe(202);
    const polled = await tenant.fetch(statusPath);
    expect(polled.status).toBe(404);
    expect(((await polled.json()) as any).resourceType).toBe('OperationOutcome');
    expect((await tenant.fetch(manifest.output[0].url.slice(service.url.length))).status).toBe(404);
    expect((await tenant.fetch(statusPath, { method: 'DELETE' })).status).toBe(404);
    expect(await service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM export_chunks WHERE employer_id = ${tenant.employerId}`)).toBe(0);
  });

  it('answers 404 to another employer for the status, the files and the cancel of an export', async () => {
    const owner = await exportTenant(service);
    const other = await exportTenant(service);
    await uploadPatients(owner.api, [{ email: 'owner@example.test', firstName: 'Owner', lastName: 'Patient' }]);
    const statusPath = await kickOff(owner, '/$export');
    const manifest = await manifestOf(owner, statusPath);
    for (const [path, method] of [[statusPath, 'GET'], [manifest.output[0].url.slice(service.url.length), 'GET'], [statusPath, 'DELETE']] as const) {
      const response = await other.fetch(path, { method });
      expect(response.status).toBe(404);
      expect(((await response.json()) as any).resourceType).toBe('OperationOutcome');
    }
    expect((await owner.fetch(statusPath)).status).toBe(200);
  });

  it("refuses a PATIENT session every Bulk Data route (403 forbidden): no kick-off, and no status, file or cancel of the employer's exports; an admin session and a key with fhir:read still export", async () => {
    const tenant = await exportTenant(service);
    const cohort = await uploadPatients(tenant.api, [
      { email: 'member@example.test', firstName: 'Member', lastName: 'Patient' },
      { email: 'colleague@example.test', firstName: 'Colleague', lastName: 'Patient' },
    ]);
    // The member's own user, provisioned as SCIM or SAML would: a PATIENT session with fhir:read.
    const { userId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
      employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim',
      profile: { email: `member.${tenant.employerId}@example.test`, userName: 'member', givenName: null, familyName: null, displayName: null, externalId: null },
    });
    const patientHeaders = service.sessionHeaders(await service.signIn(tenant.employerId, userId));
    const asPatient = (path: string, init: RequestInit = {}) =>
      fetch(`${service.url}${path}`, { ...init, headers: { ...patientHeaders, ...async, ...(init.headers as Record<string, string>) } });
    const expectForbidden = async (response: Response) => {
      expect(response.status).toBe(403);
      expect(((await response.json()) as any)).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'forbidden' }] });
    };

    // The reproduced attack: the whole employer through every kick-off.
    const parameters = { method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Parameters' }) };
    for (const path of ['/$export', '/Patient/$export', `/Group/${cohort}/$export`]) {
      await expectForbidden(await asPatient(`/api/fhir${path}`));
      await expectForbidden(await asPatient(`/api/fhir${path}`, parameters));
    }
    expect(await service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM exports WHERE employer_id = ${tenant.employerId}`)).toBe(0);

    // An administrator's export: the patient can neither read, download nor cancel it.
    const statusPath = await kickOff(tenant, '/$export?_type=Patient');
    const manifest = await manifestOf(tenant, statusPath);
    await expectForbidden(await asPatient(statusPath));
    await expectForbidden(await asPatient(manifest.output[0].url.slice(service.url.length)));
    await expectForbidden(await asPatient(statusPath, { method: 'DELETE' }));
    expect((await tenant.fetch(statusPath)).status).toBe(200);
    expect((await linesOf(tenant, manifest.output[0].url)).map((patient) => patient.telecom[0].value).sort()).toEqual(['colleague@example.test', 'member@example.test']);

    // A key with fhir:read exports as before.
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read'] });
    const withKey: ExportTenant = { ...tenant, fetch: (path, init = {}) => fetch(`${service.url}${path}`, { ...init, headers: { ...keyHeaders(rawKey), ...(init.headers as Record<string, string>) } }) };
    const keyManifest = await manifestOf(withKey, await kickOff(withKey, `/Group/${cohort}/$export?_type=Patient`));
    expect(keyManifest.output.map((file: any) => [file.type, file.count])).toEqual([['Patient', 2]]);
  });
});
