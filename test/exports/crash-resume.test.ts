// A FHIR Bulk Data export survives its worker's death: a worker child process is SIGKILLed mid-export;
// once another worker runs and the dead worker's job is recovered, the export completes with every
// resource exactly once (no missing and no duplicate line), across a file split.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BULK_FILE_MAX_LINES } from '../../src/exports/bulk-data.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { killWorkerProcess, startWorkerProcess } from '../support/worker-process.ts';
import { waitUntil, webhookEnv } from '../webhooks/helpers.ts';

const PATIENTS = 120_000;

let databaseUri: string;
let admin: pg.Client;
const services: TestService[] = [];

beforeAll(async () => {
  databaseUri = await createTestDatabaseUri();
  admin = new pg.Client({ connectionString: databaseUri });
  await admin.connect();
});
afterAll(async () => {
  for (const service of services) await service.stop();
  await admin?.end();
});

describe('a worker process killed mid-export', () => {
  it('resumes after a restart and writes every resource exactly once', async () => {
    const api = await startTestService({ databaseUri, roles: ['api', 'projections'], env: webhookEnv() });
    services.push(api);
    const tenant = await api.createTenant();
    // The read model filled directly: the test is about the export, not about registering patients.
    await admin.query(
      `INSERT INTO fhir_resources (employer_id, resource_type, id, version_id, created_at, last_updated, patient_id, resource)
       SELECT $1, 'Patient', 'p-' || lpad(n::text, 7, '0'), 1, now() - interval '1 minute', now() - interval '1 minute', 'p-' || lpad(n::text, 7, '0'),
         jsonb_build_object('resourceType', 'Patient', 'id', 'p-' || lpad(n::text, 7, '0'), 'meta', jsonb_build_object('versionId', '1'), 'name', jsonb_build_array(jsonb_build_object('family', 'Family' || n)))
       FROM generate_series(1, $2::int) AS n`,
      [tenant.employerId, PATIENTS],
    );

    const worker = await startWorkerProcess(databaseUri);
    const headers = { ...api.sessionHeaders(tenant.cookie), prefer: 'respond-async' };
    const kickOff = await fetch(`${api.url}/api/fhir/Patient/$export?_type=Patient`, { headers });
    expect(kickOff.status).toBe(202);
    const statusUrl = kickOff.headers.get('content-location')!;

    const written = await waitUntil('the export to be part-way', async () => {
      const { rows } = await admin.query(`SELECT row_count FROM exports WHERE employer_id = $1`, [tenant.employerId]);
      return rows[0].row_count >= 10_000 && rows[0].row_count;
    });
    await killWorkerProcess(worker, admin);
    const { rows: [interrupted] } = await admin.query(`SELECT status, row_count FROM exports WHERE employer_id = $1`, [tenant.employerId]);
    expect(interrupted).toMatchObject({ status: 'running' });
    expect(interrupted.row_count).toBeGreaterThanOrEqual(written);
    expect(interrupted.row_count).toBeLessThan(PATIENTS);

    services.push(await startTestService({ databaseUri, roles: ['worker'], env: webhookEnv() }));
    // What the every-minute crontab entry does, now rather than within the minute.
    await admin.query(`SELECT graphile_worker.add_job('export_recover')`);

    const manifest = await waitUntil('the export to complete', async () => {
      const polled = await fetch(statusUrl, { headers });
      return polled.status === 200 && ((await polled.json()) as any);
    }, 120_000);
    expect(manifest.output.map((file: any) => file.count)).toEqual([BULK_FILE_MAX_LINES, PATIENTS - BULK_FILE_MAX_LINES]);

    const ids: string[] = [];
    for (const file of manifest.output) {
      const text = await (await fetch(file.url, { headers })).text();
      for (const line of text.trimEnd().split('\n')) ids.push(JSON.parse(line).id);
    }
    expect(ids).toHaveLength(PATIENTS);
    expect(new Set(ids).size).toBe(PATIENTS);
    expect(ids[0]).toBe('p-0000001');
    expect(ids.at(-1)).toBe(`p-${String(PATIENTS).padStart(7, '0')}`);
  }, 240_000);
});
