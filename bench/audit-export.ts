// The audit export (GET /api/employer/audit-events/export), against 127.0.0.1 on a fresh embedded
// Postgres (or DATABASE_URL's server): one employer with 100,000 audit entries and their chain seals,
// written straight into audit_log and audit_chain (this measures the export, not the audited commands),
// a tenth of them with a user agent a spreadsheet would evaluate. Then NDJSON and CSV, each exported
// through HTTP with an audit:read key and counted here, never kept: entries/s (goal >= 50,000/s), and
// the peak RSS of the service's process (`serve`, every role, its own OS process, sampled every 10 ms)
// above its RSS at rest (goal < 100 MB). The reference, run before and after them: the same rows and
// seals read by one plain pg query into this process (no paging, formatting or HTTP), in rows/s; the
// ratio export/reference is what to compare between runs on a loaded machine.
//   npm run bench -- audit-export [entries=100000]
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { sql } from 'slonik';
import { createApiKey } from '../src/api-keys/commands.ts';
import { loadConfig } from '../src/config.ts';
import { startService } from '../src/main.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { measured, residentMb, serviceProcessSettings, startBenchDatabase, startServiceProcess, stopServiceProcess, type ServiceProcess } from './support.ts';

const MB = 1024 * 1024;

/** Reads a response to its end, counting its lines (memory stays flat on this side too). */
async function countLines(response: Response): Promise<{ lines: number; bytes: number }> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  let lines = 0;
  let bytes = 0;
  for await (const chunk of response.body!) {
    const data = chunk as Uint8Array;
    bytes += data.byteLength;
    for (let index = data.indexOf(10); index !== -1; index = data.indexOf(10, index + 1)) lines++;
  }
  return { lines, bytes };
}

export default async function auditExportBench(args: string[]) {
  const [entryCount = 100_000] = args.map(Number);
  const database = await startBenchDatabase();
  const { env, url, dataDir } = await serviceProcessSettings(database, 'audit-export', { API_KEY_RATE_LIMIT_MAX_PER_MIN: '1000000000' });
  const actor = { type: 'system', id: 'bench' } as const;
  let setup: Awaited<ReturnType<typeof startService>> | null = null;
  let service: ServiceProcess | null = null;
  try {
    setup = await startService({ config: loadConfig(env), roles: ['projections'] });
    const { employerId, adminUserId } = await createEmployer(setup.ctx, { tenantId: null, actor }, { name: 'Bench audit export', adminEmail: 'admin@bench.test' });
    const { rawKey } = await createApiKey(setup.ctx, { tenantId: employerId, actor }, {
      name: 'auditor', scopes: ['audit:read'], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: 100_000_000, createdBy: adminUserId, now: Date.now(),
    });
    const headers = { 'x-api-key': rawKey, 'x-api-version': '2026-02-01' };

    const seeded = performance.now();
    // Positions and seqs far above the setup's own events and seals, so the bench's rows never collide with them.
    await setup.ctx.db.slonik.query(sql.unsafe`
      INSERT INTO audit_log (global_position, event_id, employer_id, action, actor_type, actor_id, target_type, target_id, details, occurred_at, request_id, ip_address, user_agent)
      SELECT 1000000000 + n, md5('event' || n)::uuid, ${employerId}, (ARRAY['api_key.created', 'webhook.updated', 'scim.user.provision'])[1 + n % 3],
        'user', ${adminUserId}, 'api_key', 'key-' || n, jsonb_build_object('name', 'key ' || n, 'scopes', jsonb_build_array('cohort:read')),
        now() - interval '1 day' + n * interval '1 millisecond', 'request-' || n, '203.0.113.' || (n % 250),
        CASE WHEN n % 10 = 0 THEN '=HYPERLINK("https://example.test/' || n || '")' ELSE 'Mozilla/5.0 (X11; Linux x86_64) bench/' || n END
      FROM generate_series(1, ${entryCount}::int) AS n`);
    await setup.ctx.db.slonik.query(sql.unsafe`
      INSERT INTO audit_chain (employer_id, seq, event_id, prev_hash, hash)
      SELECT ${employerId}, 1000000000 + n, md5('event' || n)::uuid, encode(sha256(('link' || (n - 1))::bytea), 'hex'), encode(sha256(('link' || n)::bytea), 'hex')
      FROM generate_series(1, ${entryCount}::int) AS n`);
    await setup.ctx.db.slonik.query(sql.unsafe`ANALYZE audit_log`);
    await setup.ctx.db.slonik.query(sql.unsafe`ANALYZE audit_chain`);
    const seedSeconds = (performance.now() - seeded) / 1000;
    await setup.stop();
    setup = null;
    service = await startServiceProcess('all', env);
    const pid = service.child.pid!;
    const baselineMb = await residentMb(pid);
    console.log(`Seeded ${entryCount} audit entries with their seals in ${seedSeconds.toFixed(1)} s. The service (pid ${pid}, every role) at rest: RSS ${baselineMb.toFixed(0)} MB.`);

    const reference = async () => {
      const client = new pg.Client({ connectionString: database.connectionUri });
      await client.connect();
      try {
        const started = performance.now();
        const { rowCount } = await client.query(
          `SELECT entry.*, seal.seq, seal.prev_hash, seal.hash FROM audit_log AS entry LEFT JOIN audit_chain AS seal ON seal.event_id = entry.event_id
           WHERE entry.employer_id = $1 ORDER BY occurred_at, global_position`, [employerId]);
        return rowCount! / ((performance.now() - started) / 1000);
      } finally {
        await client.end();
      }
    };
    const referenceRates = [await reference()];
    const exportRates: Array<[string, number]> = [];
    for (const format of ['ndjson', 'csv'] as const) {
      const step = await measured(pid, async () => countLines(await fetch(`${url}/api/employer/audit-events/export?format=${format}`, { headers })));
      // The CSV's header row is a line too; the setup's own entries (the key's creation) are exported as well.
      const entries = step.result.lines - (format === 'csv' ? 1 : 0);
      console.log(
        `${format.padEnd(6)} export: ${entries} entries (${(step.result.bytes / MB).toFixed(1)} MB) in ${(step.ms / 1000).toFixed(2)} s = ${Math.round(entries / (step.ms / 1000))} entries/s  [goal >= 50000/s]; ` +
          `peak RSS ${step.peakRssMb.toFixed(0)} MB, +${(step.peakRssMb - baselineMb).toFixed(0)} MB above rest  [goal < 100 MB]`,
      );
      exportRates.push([format, entries / (step.ms / 1000)]);
    }
    referenceRates.push(await reference());
    const referenceRate = (referenceRates[0]! + referenceRates[1]!) / 2;
    console.log(`reference: one plain pg query of the same rows and seals, ${referenceRates.map((rate) => Math.round(rate)).join(' and ')} rows/s (before, after); ` +
      exportRates.map(([format, rate]) => `${format}/reference ${(rate / referenceRate).toFixed(2)}`).join(', '));
  } finally {
    await setup?.stop();
    if (service) await stopServiceProcess(service);
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
