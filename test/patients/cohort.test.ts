// Cohort upload end to end: all-or-nothing validation, idempotent re-upload and its counts, the
// cohort.uploaded webhook verified at a real HTTPS receiver, and one employer's patients invisible to
// another everywhere.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readModelPatientDirectory } from '../../projections/patients/queries.ts';
import { MAX_COHORT_ROWS } from '../../src/patients/cohort-row.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil, type ApiClient } from '../webhooks/helpers.ts';

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;

beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver()));
afterAll(() => stop?.());

let counter = 0;
function rows(count: number, extra: Record<string, unknown> = {}) {
  counter += 1;
  return Array.from({ length: count }, (_, i) => ({ email: `member.${counter}.${i}@example.test`, firstName: `First${i}`, lastName: `Last${i}`, ...extra }));
}

async function admin(): Promise<{ employerId: string; api: ApiClient; cookie: string }> {
  const tenant = await service.createTenant();
  return { employerId: tenant.employerId, api: apiClient(service, tenant), cookie: tenant.cookie };
}

async function roster(api: ApiClient) {
  const page = await api.get('/api/employer/patients?limit=200');
  expect(page.status).toBe(200);
  return page.body.patients as any[];
}

describe('upload-cohort', () => {
  it('refuses the whole upload when any row is invalid, listing every bad row, and writes nothing', async () => {
    const { api } = await admin();
    const patients = rows(6);
    patients[1]!.email = 'not-an-email';
    delete (patients[3] as Record<string, unknown>).lastName;
    patients[4]!.email = patients[0]!.email.toUpperCase();
    (patients[5] as Record<string, unknown>).birthDate = '2001-02-30';
    const response = await api.post('/api/employer/upload-cohort', { patients });
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('VALIDATION_ERROR');
    expect(response.body.errors.map((e: any) => [e.index, e.field])).toEqual([[1, 'email'], [3, 'lastName'], [4, 'email'], [5, 'birthDate']]);
    expect(response.body.errors[2].message).toMatch(/duplicate e-mail.*row 0/);
    expect(await roster(api)).toEqual([]);
    expect((await api.get('/api/employer/cohorts')).body.cohorts).toEqual([]);
  });

  it('creates, then counts a re-upload as unchanged, then updates what changed; the roster and cohort list follow', async () => {
    const { api } = await admin();
    const patients = rows(3, { birthDate: '1980-01-02', externalId: 'X-1', phone: '+1 555 0100' });
    const first = await api.post('/api/employer/upload-cohort', { patients });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ cohortId: expect.any(String), received: 3, created: 3, updated: 0, unchanged: 0 });

    const again = await api.post('/api/employer/upload-cohort', { patients: patients.map((p) => ({ ...p, email: p.email.toUpperCase() })) });
    expect(again.body).toMatchObject({ received: 3, created: 0, updated: 0, unchanged: 3 });

    const changed = patients.map((p, i) => (i === 1 ? { ...p, lastName: 'Married' } : p));
    const third = await api.post('/api/employer/upload-cohort', { patients: changed });
    expect(third.body).toMatchObject({ received: 3, created: 0, updated: 1, unchanged: 2 });

    const listed = await roster(api);
    expect(listed.map((p) => p.email).sort()).toEqual(patients.map((p) => p.email).sort());
    expect(listed.find((p) => p.email === patients[1]!.email)).toMatchObject({ lastName: 'Married', firstName: 'First1', birthDate: '1980-01-02', externalId: 'X-1', phone: '+1 555 0100' });

    const cohorts = (await api.get('/api/employer/cohorts')).body.cohorts;
    expect(cohorts.map((c: any) => c.cohortId)).toEqual([third.body.cohortId, again.body.cohortId, first.body.cohortId]);
    expect((await api.get(`/api/employer/cohorts/${first.body.cohortId}`)).body).toMatchObject({ ...first.body, uploadedAt: expect.any(String) });
  });

  it('pages the roster by cursor, every patient once', async () => {
    const { api } = await admin();
    await api.post('/api/employer/upload-cohort', { patients: rows(5) });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await api.get(`/api/employer/patients?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.patients.map((p: any) => p.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(5);
    expect(seen).toHaveLength(5);
  });

  it('searches the roster by e-mail (exact, any case) or the start of a first or last name (any case); wildcards are plain characters', async () => {
    const { api } = await admin();
    await api.post('/api/employer/upload-cohort', { patients: [
      { email: 'ann.lee@example.test', firstName: 'Ann', lastName: 'Lee' },
      { email: 'annika.berg@example.test', firstName: 'Annika', lastName: 'Berg' },
      { email: 'bo.annan@example.test', firstName: 'Bo', lastName: 'Annan' },
      { email: 'cy.lee@example.test', firstName: 'Cy', lastName: 'Lee' },
    ] });
    const search = async (term: string) =>
      ((await api.get(`/api/employer/patients?search=${encodeURIComponent(term)}`)).body.patients as any[]).map((p) => p.email).sort();
    expect(await search('ANN')).toEqual(['ann.lee@example.test', 'annika.berg@example.test', 'bo.annan@example.test']);
    expect(await search('lee')).toEqual(['ann.lee@example.test', 'cy.lee@example.test']);
    expect(await search('Ann.Lee@Example.test')).toEqual(['ann.lee@example.test']);
    expect(await search('ann.lee')).toEqual([]); // not an address, and no name starts so
    expect(await search('%')).toEqual([]);
    expect(await search('_nn')).toEqual([]);
    expect((await api.get(`/api/employer/patients?search=${'a'.repeat(255)}`)).status).toBe(400);
  });

  it('is the same patient whether it came through FHIR or a cohort: the upload updates it', async () => {
    const tenant = await service.createTenant();
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write', 'cohort:write'] });
    const [row] = rows(1);
    const fhir = await fetch(`${service.url}/api/fhir/Patient`, {
      method: 'POST',
      headers: { ...keyHeaders(rawKey), 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Old', given: ['Name'] }], telecom: [{ system: 'email', value: row!.email }] }),
    });
    const created = (await fhir.json()) as any;
    const upload = await fetch(`${service.url}/api/employer/upload-cohort`, {
      method: 'POST',
      headers: { ...keyHeaders(rawKey), 'content-type': 'application/json' },
      body: JSON.stringify({ patients: [row] }),
    });
    expect(await upload.json()).toMatchObject({ created: 0, updated: 1 });
    const read = (await (await fetch(`${service.url}/api/fhir/Patient/${created.id}`, { headers: keyHeaders(rawKey) })).json()) as any;
    expect(read.name).toEqual([{ family: row!.lastName, given: [row!.firstName] }]);
    expect(read.meta.versionId).toBe('2');
  });

  it('replays an Idempotency-Key retry without uploading again', async () => {
    const { api, cookie } = await admin();
    const body = JSON.stringify({ patients: rows(2) });
    const post = () => fetch(`${service.url}/api/employer/upload-cohort`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(cookie), 'content-type': 'application/json', 'idempotency-key': 'upload-1' },
      body,
    });
    const first = await post();
    const retry = await post();
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await retry.json()).toEqual(await first.json());
    expect((await api.get('/api/employer/cohorts')).body.cohorts).toHaveLength(1);
  });

  it(`refuses more than ${MAX_COHORT_ROWS} rows and bodies past the limit with 413 naming the limit; needs cohort:write`, async () => {
    const { api } = await admin();
    const tooMany = await api.post('/api/employer/upload-cohort', { patients: rows(MAX_COHORT_ROWS + 1) });
    expect(tooMany.status).toBe(413);
    expect(tooMany.body).toMatchObject({ code: 'COHORT_TOO_LARGE', maxRows: MAX_COHORT_ROWS });
    const huge = await api.post('/api/employer/upload-cohort', { patients: [{ email: 'a@b.test', firstName: 'x'.repeat(9 * 1024 * 1024), lastName: 'y' }] });
    expect(huge.status).toBe(413);
    expect(huge.body.message).toMatch(/8388608 bytes/);

    const tenant = await service.createTenant();
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['cohort:read'] });
    const refused = await fetch(`${service.url}/api/employer/upload-cohort`, {
      method: 'POST', headers: { ...keyHeaders(rawKey), 'content-type': 'application/json' }, body: JSON.stringify({ patients: rows(1) }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).code).toBe('INSUFFICIENT_SCOPE');
  });
});

describe('cohort.uploaded', () => {
  it('is delivered with the upload summary as data, signed', async () => {
    const { employerId, api } = await admin();
    const { secret } = await subscribe(api, `${receiver.url}/cohorts-${employerId}`, { events: ['cohort.uploaded'] });
    const upload = await api.post('/api/employer/upload-cohort', { patients: rows(2) });
    const received = await waitUntil('cohort.uploaded', () => receiver.requests.find((request) => request.path === `/cohorts-${employerId}`));
    const headers = { 'webhook-id': String(received.headers['webhook-id']), 'webhook-timestamp': String(received.headers['webhook-timestamp']), 'webhook-signature': String(received.headers['webhook-signature']) };
    const payload = new Webhook(secret).verify(received.body, headers) as any;
    expect(payload).toMatchObject({ event: 'cohort.uploaded', employerId, data: upload.body });
  });
});

describe('cohort members (the platform workflows\' patient directory)', () => {
  it('a patient changed by a later upload belongs to both cohorts; an erased patient to none and exists no more', async () => {
    const { employerId, api } = await admin();
    const directory = readModelPatientDirectory(service.ctx.db.slonik);
    const patients = rows(3);
    const first = await api.post('/api/employer/upload-cohort', { patients });
    const second = await api.post('/api/employer/upload-cohort', { patients: [{ ...patients[0]!, lastName: 'Changed' }, patients[1]!] });
    expect(second.body).toMatchObject({ updated: 1, unchanged: 1 });
    expect(await directory.countActive(employerId, first.body.cohortId)).toBe(3);
    expect(await directory.countActive(employerId, second.body.cohortId)).toBe(1);
    expect(await directory.countActive(employerId)).toBe(3);

    const changed = (await roster(api)).find((p) => p.email === patients[0]!.email);
    expect(await directory.exists(employerId, changed.id)).toBe(true);
    expect((await api.delete(`/api/employer/patients/${changed.id}/personal-data`)).status).toBe(200);
    expect(await directory.exists(employerId, changed.id)).toBe(false);
    expect(await directory.countActive(employerId, first.body.cohortId)).toBe(2);
    expect(await directory.countActive(employerId, second.body.cohortId)).toBe(0);
    expect(await directory.countActive(employerId)).toBe(2);
    expect(await directory.countActive('emp_other', first.body.cohortId)).toBe(0);
  });
});

describe('tenant isolation', () => {
  it("keeps one employer's patients and cohorts out of another's roster, cohorts and FHIR", async () => {
    const one = await admin();
    const two = await admin();
    const patients = rows(2);
    const upload = await one.api.post('/api/employer/upload-cohort', { patients });
    const [patient] = await roster(one.api);

    expect(await roster(two.api)).toEqual([]);
    expect((await two.api.get(`/api/employer/patients?search=${encodeURIComponent(patient.email)}`)).body.patients).toEqual([]);
    expect((await two.api.get(`/api/employer/cohorts/${upload.body.cohortId}`)).status).toBe(404);
    expect((await two.api.get('/api/employer/cohorts')).body.cohorts).toEqual([]);
    expect((await two.api.get(`/api/fhir/Patient/${patient.id}`)).status).toBe(404);
    const search = await two.api.get(`/api/fhir/Patient?email=${encodeURIComponent(patient.email)}`);
    expect(search.body).toMatchObject({ resourceType: 'Bundle', total: 0 });
    expect((await two.api.delete(`/api/employer/patients/${patient.id}/personal-data`)).status).toBe(404);

    // The same address in another employer is another patient.
    const theirs = await two.api.post('/api/employer/upload-cohort', { patients: [patients[0]] });
    expect(theirs.body).toMatchObject({ created: 1 });
    expect((await roster(two.api))[0].id).not.toBe(patient.id);
  });
});
