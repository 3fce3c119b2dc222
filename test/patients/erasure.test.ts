// Erasure of a patient's personal data from an append-only log (crypto-shredding): afterwards no table
// of the database holds the patient's e-mail, names or health data in clear (every row of every
// table searched as text, the event log included), FHIR answers 410, replay still lists every event
// with the personal fields shown as erased, and other patients are untouched.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { runCli } from '../support/cli.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, TEST_ENCRYPTION_KEY, type ApiClient } from '../webhooks/helpers.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ env: { ENCRYPTION_KEY: TEST_ENCRYPTION_KEY } });
});
afterAll(async () => {
  await service?.stop();
});

/** The CLI's output; a failing command fails the test, with its error output. */
async function cli(...args: string[]) {
  const { code, stdout, stderr } = await runCli(service, args, { ENCRYPTION_KEY: TEST_ENCRYPTION_KEY });
  if (code !== 0) throw new Error(`cli ${args.join(' ')} exited with ${code}: ${stderr}`);
  return stdout;
}

/** Tables (schema.table) with a row whose text contains `needle`, case-insensitively: the whole database. */
async function tablesContaining(needle: string): Promise<string[]> {
  const tables = await service.ctx.db.slonik.any(sql.type(z.object({ schema: z.string(), name: z.string() }))`
    SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
    WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`);
  const found: string[] = [];
  for (const table of tables) {
    const hit = await service.ctx.db.slonik.oneFirst(sql.type(z.object({ hit: z.boolean() }))`
      SELECT EXISTS (SELECT 1 FROM ${sql.identifier([table.schema, table.name])} t WHERE t::text ILIKE ${`%${needle}%`}) AS hit`);
    if (hit) found.push(`${table.schema}.${table.name}`);
  }
  expect(tables.length).toBeGreaterThan(20);
  return found;
}

function person(tag: string) {
  const unique = `${tag}${Math.random().toString(36).slice(2, 8)}`;
  return { email: `${unique}.mail@example.test`, firstName: `Zebulon${unique}`, lastName: `Quixotic${unique}`, birthDate: '1971-03-04', phone: '+44 20 7946 0000' };
}

describe('erasure', () => {
  let api: ApiClient;
  let fhirHeaders: Record<string, string>;
  let employerId: string;
  const erased = person('erased');
  const kept = person('kept');
  const diagnosis = `Hemochromatosis${Math.random().toString(36).slice(2, 8)}`;
  let erasedId: string;
  let keptId: string;
  let observationId: string;

  beforeAll(async () => {
    const tenant = await service.createTenant();
    employerId = tenant.employerId;
    api = apiClient(service, tenant);
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write', 'cohort:write', 'cohort:read'] });
    fhirHeaders = { ...keyHeaders(rawKey), 'content-type': 'application/fhir+json' };
    expect((await api.post('/api/employer/upload-cohort', { patients: [erased, kept] })).status).toBe(201);
    const roster = (await api.get('/api/employer/patients')).body.patients as any[];
    erasedId = roster.find((p) => p.email === erased.email).id;
    keptId = roster.find((p) => p.email === kept.email).id;
    // A second version through FHIR, and a clinical resource with health data of the patient.
    const current = (await api.get(`/api/fhir/Patient/${erasedId}`)).body;
    const update = await fetch(`${service.url}/api/fhir/Patient/${erasedId}`, { method: 'PUT', headers: fhirHeaders, body: JSON.stringify({ ...current, gender: 'male' }) });
    expect(update.status).toBe(200);
    const observation = await fetch(`${service.url}/api/fhir/Observation`, {
      method: 'POST',
      headers: fhirHeaders,
      body: JSON.stringify({ resourceType: 'Observation', status: 'final', code: { text: diagnosis }, subject: { reference: `Patient/${erasedId}` }, note: [{ text: `${diagnosis} confirmed` }] }),
    });
    observationId = ((await observation.json()) as any).id;
  });

  it('before: the data is readable (and the database search finds it, so the search works)', async () => {
    expect(await tablesContaining(erased.email)).toEqual(['public.fhir_resources']);
    expect(await tablesContaining(diagnosis)).toEqual(['public.fhir_resources']);
    // The event log holds it only sealed.
    expect((await service.ctx.eventStore.readAll({ tenantId: employerId })).some((event) => JSON.stringify(event.data).includes(erased.lastName))).toBe(false);
  });

  it('is for an admin session only', async () => {
    const refused = await fetch(`${service.url}/api/employer/patients/${erasedId}/personal-data`, { method: 'DELETE', headers: keyHeaders(fhirHeaders['x-api-key']!) });
    expect(refused.status).toBe(403);
  });

  it('erases: no plaintext anywhere, FHIR 410, replay lists the events with erased fields, others untouched', async () => {
    const response = await api.delete(`/api/employer/patients/${erasedId}/personal-data`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ patientId: erasedId, erasedAt: expect.any(String) });
    expect((await api.delete(`/api/employer/patients/${erasedId}/personal-data`)).body).toEqual(response.body);

    for (const needle of [erased.email, erased.firstName, erased.lastName, diagnosis]) expect({ needle, tables: await tablesContaining(needle) }).toEqual({ needle, tables: [] });

    for (const path of [`Patient/${erasedId}`, `Patient/${erasedId}/_history/1`, `Observation/${observationId}`, `Observation/${observationId}/_history/1`]) {
      const gone = await api.get(`/api/fhir/${path}`);
      expect({ path, status: gone.status, code: gone.body.issue[0].code }).toEqual({ path, status: 410, code: 'deleted' });
    }
    expect((await api.get(`/api/fhir/Patient?email=${encodeURIComponent(erased.email)}`)).body.total).toBe(0);
    expect((await api.get(`/api/fhir/Observation?patient=${erasedId}`)).body.total).toBe(0);
    expect(((await api.get('/api/employer/patients')).body.patients as any[]).map((p) => p.id)).toEqual([keptId]);

    const keptPatient = await api.get(`/api/fhir/Patient/${keptId}`);
    expect(keptPatient.status).toBe(200);
    expect(keptPatient.body.name).toEqual([{ family: kept.lastName, given: [kept.firstName] }]);

    // Events keep their stored ciphertext (the audit chain is over it) and name the fields that can no longer be opened.
    const replay = (await cli('events', 'replay', '--tenant', employerId)).trim().split('\n').map((line) => JSON.parse(line)).filter((record) => !record.checkpoint);
    const ofErased = replay.filter((event) => event.data.patientId === erasedId);
    expect(ofErased.map((event) => event.type)).toEqual(['PatientRegistered', 'PatientEmailClaimed', 'PatientUpdated', 'ClinicalResourceCreated', 'PatientErased', 'PatientEmailReleased']);
    const sealedOfErased = ofErased.filter((event) => 'sealed' in event.data);
    expect(sealedOfErased.length).toBeGreaterThan(0);
    for (const event of sealedOfErased) expect(event).toMatchObject({ erasedFields: ['data.sealed'], data: { sealed: expect.stringMatching(/^v1\./) } });
    const ofKept = replay.find((event) => event.type === 'PatientRegistered' && event.data.patientId === keptId);
    expect(ofKept.data.sealed).toMatch(/^v1\./);
    expect(ofKept.erasedFields).toBeUndefined();
    // The employer's audit chain still verifies after the erasure.
    expect(await cli('events', 'verify', '--tenant', employerId)).toMatch(/OK/);
  });

  it('lets the address be registered again as a new patient, and erases from the CLI too', async () => {
    const again = await api.post('/api/employer/upload-cohort', { patients: [erased] });
    expect(again.body).toMatchObject({ created: 1, updated: 0 });
    const newId = ((await api.get('/api/employer/patients')).body.patients as any[]).find((p) => p.email === erased.email).id;
    expect(newId).not.toBe(erasedId);

    expect(await cli('patients', 'erase', '--tenant', employerId, '--patient', newId)).toMatch(/Erased/);
    expect((await api.get(`/api/fhir/Patient/${newId}`)).status).toBe(410);
    expect(await tablesContaining(erased.email)).toEqual([]);
  });
});
