// Exports, against 127.0.0.1 on a fresh embedded Postgres (or DATABASE_URL's server), one employer
// with 100,000 patients and 100,000 Observations (written straight into the fhir-resources read model:
// this measures the exports, not the uploads; bench fhir measures those):
// (a) FHIR Bulk Data: kick-off to manifest, in resources/s (goal >= 20,000/s), then the download of
//     every file;
// (b) CSV export: POST to completed, in rows/s (goal >= 50,000/s), then the download;
// (c) JSON roster export and (d) PDF report: wall time of the streamed download.
// The service runs as `npm start` runs it (`serve`, every role, its own OS process); the tenant and the
// data are written by a short-lived service in this process first. Each line also gives the service
// process's peak RSS during that step, sampled from /proc every 10 ms (goal under 300 MB); downloads
// are counted here, never kept.
//   npm run bench -- export [patients=100000] [observations=100000]
import { rm } from 'node:fs/promises';
import { sql } from 'slonik';
import { createApiKey } from '../src/api-keys/commands.ts';
import { loadConfig } from '../src/config.ts';
import { startService } from '../src/main.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { drain, measured, residentMb, serviceProcessSettings, startBenchDatabase, startServiceProcess, stopServiceProcess, type ServiceProcess } from './support.ts';

const MB = 1024 * 1024;

export default async function exportBench(args: string[]) {
  const [patientCount = 100_000, observationCount = 100_000] = args.map(Number);
  const database = await startBenchDatabase();
  const { env, url, dataDir } = await serviceProcessSettings(database, 'export', { API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000000' });
  const actor = { type: 'system', id: 'bench' } as const;
  let setup: Awaited<ReturnType<typeof startService>> | null = null;
  let service: ServiceProcess | null = null;
  try {
    setup = await startService({ config: loadConfig(env), roles: ['projections'] });
    const { employerId, adminUserId } = await createEmployer(setup.ctx, { tenantId: null, actor }, { name: 'Bench exports', adminEmail: 'admin@bench.test' });
    const { rawKey } = await createApiKey(setup.ctx, { tenantId: employerId, actor }, {
      name: 'bench', scopes: ['export:read', 'export:create', 'fhir:read'], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: 100_000_000, createdBy: adminUserId, now: Date.now(),
    });
    const headers = { 'x-api-key': rawKey, 'x-api-version': '2026-02-01' };
    const get = (path: string, extra: Record<string, string> = {}) => fetch(path.startsWith('http') ? path : `${url}${path}`, { headers: { ...headers, ...extra } });
    const pollUntil = async (probe: () => Promise<unknown>) => {
      for (;;) {
        const value = await probe();
        if (value) return value;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };

    const seeded = performance.now();
    await setup.ctx.db.slonik.query(sql.unsafe`
      INSERT INTO fhir_resources (employer_id, resource_type, id, version_id, created_at, last_updated, patient_id, resource)
      SELECT ${employerId}, 'Patient', 'p' || n, 1, now() - interval '1 hour' + n * interval '1 microsecond', now() - interval '1 hour', 'p' || n,
        jsonb_build_object('resourceType', 'Patient', 'id', 'p' || n, 'meta', jsonb_build_object('versionId', '1', 'lastUpdated', '2026-01-01T00:00:00Z'),
          'name', jsonb_build_array(jsonb_build_object('family', 'Last' || n, 'given', jsonb_build_array('First' || n))),
          'telecom', jsonb_build_array(jsonb_build_object('system', 'email', 'value', 'member.' || n || '@bench.test')),
          'birthDate', '1980-01-01')
      FROM generate_series(1, ${patientCount}::int) AS n`);
    await setup.ctx.db.slonik.query(sql.unsafe`
      INSERT INTO fhir_resources (employer_id, resource_type, id, version_id, created_at, last_updated, patient_id, resource)
      SELECT ${employerId}, 'Observation', 'o' || n, 1, now() - interval '1 hour', now() - interval '1 hour', 'p' || (1 + n % ${patientCount}::int),
        jsonb_build_object('resourceType', 'Observation', 'id', 'o' || n, 'meta', jsonb_build_object('versionId', '1', 'lastUpdated', '2026-01-01T00:00:00Z'), 'status', 'final',
          'code', jsonb_build_object('coding', jsonb_build_array(jsonb_build_object('system', 'http://loinc.org', 'code', '29463-7'))),
          'subject', jsonb_build_object('reference', 'Patient/p' || (1 + n % ${patientCount}::int)), 'valueQuantity', jsonb_build_object('value', 70, 'unit', 'kg'))
      FROM generate_series(1, ${observationCount}::int) AS n`);
    await setup.ctx.db.slonik.query(sql.unsafe`ANALYZE fhir_resources`);
    const seedSeconds = (performance.now() - seeded) / 1000;
    await setup.stop();
    setup = null;
    service = await startServiceProcess('all', env);
    const pid = service.child.pid!;
    const baselineMb = await residentMb(pid);
    console.log(`Seeded ${patientCount} patients and ${observationCount} Observations in ${seedSeconds.toFixed(1)} s. The service (pid ${pid}, every role) at rest: RSS ${baselineMb.toFixed(0)} MB.`);
    const rss = (step: { peakRssMb: number }) => `peak RSS ${step.peakRssMb.toFixed(0)} MB (+${(step.peakRssMb - baselineMb).toFixed(0)})`;

    const bulk = await measured(pid, async () => {
      const kickOff = await get('/api/fhir/$export?_type=Patient,Observation', { prefer: 'respond-async' });
      if (kickOff.status !== 202) throw new Error(`kick-off: ${kickOff.status} ${await kickOff.text()}`);
      const statusUrl = kickOff.headers.get('content-location')!;
      return (await pollUntil(async () => {
        const polled = await get(statusUrl);
        return polled.status === 200 ? polled.json() : (await polled.arrayBuffer(), false);
      })) as { output: Array<{ url: string; count: number }> };
    });
    const resources = bulk.result.output.reduce((sum, file) => sum + file.count, 0);
    console.log(`(a) FHIR Bulk Data export: ${resources} resources in ${(bulk.ms / 1000).toFixed(2)} s = ${Math.round(resources / (bulk.ms / 1000))} resources/s  [goal >= 20000/s]; ${rss(bulk)}`);
    const bulkDownload = await measured(pid, async () => {
      let bytes = 0;
      for (const file of bulk.result.output) bytes += await drain(await get(file.url));
      return bytes;
    });
    console.log(`    download of its ${bulk.result.output.length} files (${(bulkDownload.result / MB).toFixed(0)} MB): ${(bulkDownload.ms / 1000).toFixed(2)} s; ${rss(bulkDownload)}`);

    const csv = await measured(pid, async () => {
      const started = await fetch(`${url}/api/employer/export/csv`, { method: 'POST', headers });
      const { exportId } = (await started.json()) as { exportId: string };
      return (await pollUntil(async () => {
        const status = (await (await get(`/api/employer/export/csv/exports/${exportId}`)).json()) as { status: string; rowCount: number };
        return status.status === 'completed' && { exportId, rowCount: status.rowCount };
      })) as { exportId: string; rowCount: number };
    });
    console.log(`(b) CSV export: ${csv.result.rowCount} rows in ${(csv.ms / 1000).toFixed(2)} s = ${Math.round(csv.result.rowCount / (csv.ms / 1000))} rows/s  [goal >= 50000/s]; ${rss(csv)}`);
    const csvDownload = await measured(pid, async () => drain(await get(`/api/employer/export/csv/exports/${csv.result.exportId}/download`)));
    console.log(`    download (${(csvDownload.result / MB).toFixed(1)} MB): ${(csvDownload.ms / 1000).toFixed(2)} s; ${rss(csvDownload)}`);

    const json = await measured(pid, async () => drain(await get('/api/employer/export')));
    console.log(`(c) JSON roster export (${(json.result / MB).toFixed(1)} MB): ${(json.ms / 1000).toFixed(2)} s; ${rss(json)}`);
    const pdf = await measured(pid, async () => drain(await get('/api/employer/export/pdf')));
    console.log(`(d) PDF report (${(pdf.result / MB).toFixed(1)} MB): ${(pdf.ms / 1000).toFixed(2)} s; ${rss(pdf)}  [RSS goal < 300 MB in every step]`);
  } finally {
    await setup?.stop();
    if (service) await stopServiceProcess(service);
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
