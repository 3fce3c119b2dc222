// The read models a cohort upload writes (fhir-resources, patients) are applied inline, in the
// transaction that appends its events: the upload answers 201 with every row readable, a forced
// failure half-way leaves nothing, concurrent uploads of the same e-mails make one patient each,
// reads go on being served during a 10,000-row upload, a rebuild from the events gives the same rows,
// and an upload whose other read models lag answers 202 with its cohort to poll.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'slonik';
import { rebuildProjection } from '../../projections/rebuild.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { erasePatient } from '../../src/patients/commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, type ApiClient } from '../webhooks/helpers.ts';

// An inline projection after fhir-resources and patients that fails while `failing` is set: the
// upload's events are appended and both read models written in its transaction when it throws.
let failing = false;
const failingHalfWay: Projection = {
  name: 'test-fails-half-way',
  tables: [],
  eventTypes: ['PatientRegistered'],
  inline: true,
  rebuildable: false,
  async apply() {
    if (failing) throw new Error('forced failure half-way through an upload');
  },
};

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { FHIR_RATE_LIMIT_PER_MIN: '1000000', PROJECTION_WAIT_TIMEOUT_MS: '60000' }, extraProjections: [failingHalfWay] });
});
afterAll(() => service?.stop());

const rowsOf = (prefix: string, from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({ email: `${prefix}.${from + i}@example.test`, firstName: `First${from + i}`, lastName: 'Inline' }));

async function admin(): Promise<{ employerId: string; api: ApiClient }> {
  const tenant = await service.createTenant();
  return { employerId: tenant.employerId, api: apiClient(service, tenant) };
}

const patientsWithEmail = async (api: ApiClient, email: string) => {
  const response = await api.get(`/api/fhir/Patient?email=${encodeURIComponent(email)}`);
  expect(response.status).toBe(200);
  return response.body.total as number;
};

const countOf = (table: 'events' | 'fhir_resources' | 'cohorts' | 'cohort_members', employerId: string) =>
  service.ctx.db.slonik.oneFirst(
    table === 'events'
      ? sql.unsafe`SELECT count(*)::int FROM events WHERE tenant_id = ${employerId}`
      : sql.unsafe`SELECT count(*)::int FROM ${sql.identifier([table])} WHERE employer_id = ${employerId}`,
  );

describe('a cohort upload with inline read models', () => {
  it('answers 201 once a 10,000-row upload is readable, serving reads alongside it without a 5xx', async () => {
    const { api } = await admin();
    const seeded = rowsOf('seeded', 0, 1);
    expect((await api.post('/api/employer/upload-cohort', { patients: seeded })).status).toBe(201);

    const patients = rowsOf('big', 0, 10_000);
    let uploading = true;
    const statuses: number[] = [];
    const reads = [
      () => api.get(`/api/fhir/Patient?email=${encodeURIComponent(seeded[0]!.email)}`),
      () => api.get('/api/employer/patients?limit=50'),
      () => api.get('/api/employer/cohorts'),
      () => api.get('/api/fhir/Patient?family=inline&_count=10'),
    ];
    const reader = async () => {
      // Until the upload answers, and a round of each read after it.
      for (let round = 0; uploading || round % reads.length !== 0; round++) statuses.push((await reads[round % reads.length]!()).status);
    };
    const upload = api.post('/api/employer/upload-cohort', { patients }).finally(() => (uploading = false));
    await Promise.all([reader(), reader(), upload]);

    expect((await upload).status).toBe(201);
    expect((await upload).body).toMatchObject({ created: 10_000 });
    // Read right after the answer: the last row is there.
    expect(await patientsWithEmail(api, patients[9_999]!.email)).toBe(1);
    expect(statuses.length).toBeGreaterThan(reads.length * 2);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  }, 300_000);

  it('is skipped by the runner, which moves its checkpoint past the upload without applying it again', async () => {
    const { api } = await admin();
    const appliedOf = () => service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT coalesce((SELECT events_applied::int FROM projection_checkpoints WHERE name = 'fhir-resources'), 0)`);
    const before = await appliedOf();
    expect((await api.post('/api/employer/upload-cohort', { patients: rowsOf('skipped', 0, 20) })).status).toBe(201);
    const head = await service.ctx.eventStore.headPosition();
    while (!(await service.ctx.waitForReadModels(head, ['fhir-resources'])));
    expect(await appliedOf()).toBe(before);
  }, 120_000);

  it('writes nothing when it fails half-way (events appended and read models written in its transaction), and all once retried', async () => {
    const { employerId, api } = await admin();
    const patients = rowsOf('halfway', 0, 500);
    const before = await countOf('events', employerId);
    failing = true;
    try {
      expect((await api.post('/api/employer/upload-cohort', { patients })).status).toBe(500);
    } finally {
      failing = false;
    }
    expect(await countOf('events', employerId)).toBe(before);
    expect(await countOf('fhir_resources', employerId)).toBe(0);
    expect(await countOf('cohorts', employerId)).toBe(0);
    expect(await countOf('cohort_members', employerId)).toBe(0);
    expect(await patientsWithEmail(api, patients[250]!.email)).toBe(0);

    const retried = await api.post('/api/employer/upload-cohort', { patients });
    expect(retried).toMatchObject({ status: 201, body: { created: 500 } });
    expect(await countOf('fhir_resources', employerId)).toBe(500);
    expect(await countOf('cohort_members', employerId)).toBe(500);
  }, 120_000);

  it('makes one patient per e-mail when uploads with overlapping e-mails run at once', async () => {
    const { employerId, api } = await admin();
    // Each upload: 150 rows of its own and the same 150 shared rows.
    const shared = rowsOf('shared', 0, 150);
    const uploads = await Promise.all(['first', 'second', 'third'].map((prefix) => api.post('/api/employer/upload-cohort', { patients: [...rowsOf(prefix, 0, 150), ...shared] })));
    for (const upload of uploads) expect(upload.status).toBe(201);
    // The shared rows are created once; the uploads that lost the race find them (unchanged).
    expect(uploads.map((upload) => upload.body.created).reduce((a, b) => a + b)).toBe(3 * 150 + 150);
    expect(uploads.map((upload) => upload.body.unchanged).reduce((a, b) => a + b)).toBe(2 * 150);
    expect(await countOf('fhir_resources', employerId)).toBe(600);
    for (const row of [shared[0]!, shared[149]!]) expect(await patientsWithEmail(api, row.email)).toBe(1);
    const duplicates = await service.ctx.db.slonik.anyFirst(sql.unsafe`
      SELECT value FROM fhir_search_values WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND param = 'email' GROUP BY value HAVING count(*) > 1`);
    expect(duplicates).toEqual([]);
  }, 120_000);

  it('gives the same rows rebuilt from the events as written inline', async () => {
    const { employerId, api } = await admin();
    const first = rowsOf('rebuilt', 0, 40);
    expect((await api.post('/api/employer/upload-cohort', { patients: first })).status).toBe(201);
    // Changed rows (updates), new ones, and FHIR writes beside the uploads.
    const changed = first.map((row, i) => (i % 2 === 0 ? { ...row, lastName: 'Changed' } : row));
    expect((await api.post('/api/employer/upload-cohort', { patients: [...changed, ...rowsOf('rebuilt', 40, 10)] })).status).toBe(201);
    const patient = await api.post('/api/fhir/Patient', { resourceType: 'Patient', name: [{ family: 'Direct' }], telecom: [{ system: 'email', value: 'direct@example.test' }] });
    expect(patient.status).toBe(201);
    const observation = await api.post('/api/fhir/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${patient.body.id}` } });
    expect(observation.status).toBe(201);
    const roster = (await api.get('/api/employer/patients?limit=200')).body.patients as { id: string }[];
    await erasePatient(service.ctx, { tenantId: employerId, actor: { type: 'system', id: 'test' } }, { patientId: roster[3]!.id });

    const { slonik } = service.ctx.db;
    const snapshot = async () => ({
      resources: await slonik.anyFirst(sql.unsafe`SELECT to_jsonb(t)::text FROM fhir_resources t ORDER BY employer_id, resource_type, id`),
      searchValues: await slonik.anyFirst(sql.unsafe`SELECT to_jsonb(t)::text FROM fhir_search_values t ORDER BY employer_id, resource_type, resource_id, param, value`),
      versions: await slonik.anyFirst(sql.unsafe`SELECT to_jsonb(t)::text FROM fhir_resource_versions t ORDER BY employer_id, resource_type, id, version_id`),
      cohorts: await slonik.anyFirst(sql.unsafe`SELECT to_jsonb(t)::text FROM cohorts t ORDER BY employer_id, cohort_id`),
      members: await slonik.anyFirst(sql.unsafe`SELECT to_jsonb(t)::text FROM cohort_members t ORDER BY employer_id, cohort_id, patient_id`),
    });
    const live = await snapshot();
    expect(live.resources.length).toBeGreaterThan(50);
    for (const name of ['fhir-resources', 'patients']) {
      await rebuildProjection({ db: service.ctx.db, eventStore: service.ctx.eventStore, projection: service.projections.find((projection) => projection.name === name)! });
    }
    expect(await snapshot()).toEqual(live);
    // Written inline after the rebuild, into the swapped-in tables.
    const later = rowsOf('after-rebuild', 0, 3);
    expect((await api.post('/api/employer/upload-cohort', { patients: later })).status).toBe(201);
    expect(await patientsWithEmail(api, later[2]!.email)).toBe(1);
  }, 180_000);
});

describe('a cohort upload whose read models lag', () => {
  it('answers 202 with its cohort to poll, the rows written (inline read models included) and readable', async () => {
    // A read model the upload waits for, held until the test lets it go: the wait times out.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const heldProjection: Projection = { name: 'test-held', tables: [], eventTypes: ['CohortUploaded'], awaitedByCommands: true, rebuildable: false, apply: () => held };
    const lagging = await startTestService({ env: { PROJECTION_WAIT_TIMEOUT_MS: '200', FHIR_RATE_LIMIT_PER_MIN: '1000000' }, extraProjections: [heldProjection] });
    try {
      const tenant = await lagging.createTenant();
      const api = apiClient(lagging, tenant);
      const patients = rowsOf('lagging', 0, 3);
      const response = await fetch(`${lagging.url}/api/employer/upload-cohort`, {
        method: 'POST', headers: { ...lagging.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify({ patients }),
      });
      expect(response.status).toBe(202);
      const body = await response.json();
      expect(body).toMatchObject({ cohortId: expect.any(String), created: 3 });
      expect(response.headers.get('location')).toBe(`/api/employer/cohorts/${body.cohortId}`);
      expect(response.headers.get('retry-after')).toBe('1');
      // Postgres applied the upload's own read models in its transaction: the cohort and its rows are there.
      expect(await api.get(response.headers.get('location')!)).toMatchObject({ status: 200, body: { cohortId: body.cohortId, created: 3 } });
      const search = await api.get(`/api/fhir/Patient?email=${encodeURIComponent(patients[2]!.email)}`);
      expect(search).toMatchObject({ status: 200, body: { total: 1 } });
    } finally {
      release();
      await lagging.stop();
    }
  }, 120_000);
});
