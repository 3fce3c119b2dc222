// The upload, shared by `npm run bench -- fhir` (a) and `event-store` (e): three cohort uploads of
// 10,000 new rows each (POST to its answer, which comes once the rows are readable), their median,
// next to their physical reference in the same run: 10,000 data keys wrapped under the master key and
// one COPY of 10,000 equivalent rows (each a sealed patient, its e-mail's blind index) into an
// unindexed table.
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { from as copyFrom } from 'pg-copy-streams';
import { Pool } from 'undici';
import { createApiKey } from '../src/api-keys/commands.ts';
import { emailBlindIndex, sealPersonal } from '../src/crypto/personal-data.ts';
import { encryptSecret } from '../src/crypto/secret-box.ts';
import { patientFromRow } from '../src/patients/cohort-row.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { startBenchService } from './support.ts';

type BenchService = Awaited<ReturnType<typeof startBenchService>>;

export const ROWS_PER_UPLOAD = 10_000;
const RUNS = 3;

export const emailOf = (i: number) => `member.${i}@bench.test`;
const rowOf = (i: number) => ({ email: emailOf(i), firstName: `First${i}`, lastName: `Last${i % 5000}`, birthDate: '1980-01-01', externalId: `E${i}` });

/** POSTs one upload of rows `from`..`from + count - 1` and answers its wall time and body (any status but 201 fails). */
export async function uploadCohort(http: Pool, headers: Record<string, string>, from: number, count = ROWS_PER_UPLOAD) {
  const patients = Array.from({ length: count }, (_, k) => rowOf(from + k));
  const started = performance.now();
  const response = await http.request({ method: 'POST', path: '/api/employer/upload-cohort', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ patients }) });
  const body = await response.body.text();
  if (response.statusCode !== 201) throw new Error(`upload failed: ${response.statusCode} ${body.slice(0, 300)}`);
  return { ms: performance.now() - started, result: JSON.parse(body) as { created: number; unchanged: number } };
}

/**
 * Prints the upload line: RUNS uploads of new rows (rows `from` on), their median, beside the
 * reference. Returns the next unused row number.
 */
export async function printCohortUploads(service: BenchService, http: Pool, headers: Record<string, string>, label: string, from = 0): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < RUNS; run++) times.push((await uploadCohort(http, headers, from + run * ROWS_PER_UPLOAD)).ms);
  const reference = await physicalReference(service);
  const median = [...times].sort((a, b) => a - b)[Math.floor(RUNS / 2)]!;
  console.log(`${label} cohort upload of ${ROWS_PER_UPLOAD} new rows, answered once readable: ${times.map((ms) => ms.toFixed(0)).join(', ')} ms, median ${median.toFixed(0)} ms  [goal < 2000 ms]`);
  console.log(`    reference: ${ROWS_PER_UPLOAD} key wraps ${reference.wrapMs.toFixed(0)} ms + one COPY of ${ROWS_PER_UPLOAD} sealed rows into an unindexed table ${reference.copyMs.toFixed(0)} ms = ` +
    `${(reference.wrapMs + reference.copyMs).toFixed(0)} ms; ratio upload/reference ${(median / (reference.wrapMs + reference.copyMs)).toFixed(1)}`);
  return from + RUNS * ROWS_PER_UPLOAD;
}

/** The least the same physical work costs: wrap a data key per row, then COPY the sealed rows in once. */
async function physicalReference(service: BenchService): Promise<{ wrapMs: number; copyMs: number }> {
  const { encryptionKey, db } = service.ctx;
  const employerId = 'bench-reference';
  const wrapStarted = performance.now();
  const keys = Array.from({ length: ROWS_PER_UPLOAD }, (_, i) => {
    const raw = randomBytes(32);
    encryptSecret(raw.toString('base64'), encryptionKey, `${employerId}/${i}`);
    return createSecretKey(raw);
  });
  const wrapMs = performance.now() - wrapStarted;
  const lines = keys.map((key, i) => {
    const row = rowOf(i);
    const sealed = sealPersonal(patientFromRow(row), key, `${employerId}/Patient/${i}`);
    return `${randomUUID()}\t${employerId}\t${emailBlindIndex(encryptionKey, employerId, row.email)}\t${JSON.stringify({ sealed })}\n`;
  });
  const client = await db.pg.connect();
  try {
    await client.query('CREATE TEMPORARY TABLE bench_cohort_reference (id uuid, employer_id text, email_index text, data jsonb)');
    const copyStarted = performance.now();
    await pipeline(Readable.from(lines), client.query(copyFrom('COPY bench_cohort_reference FROM STDIN')));
    const copyMs = performance.now() - copyStarted;
    await client.query('DROP TABLE bench_cohort_reference');
    return { wrapMs, copyMs };
  } finally {
    client.release();
  }
}

/** The upload line on a service of its own (`npm run bench -- event-store` (e)). */
export async function cohortUploadBench(label: string): Promise<void> {
  const service = await startBenchService({ env: { PROJECTION_WAIT_TIMEOUT_MS: '60000' } });
  const http = new Pool(service.url, { connections: 1 });
  const actor = { type: 'system', id: 'bench' } as const;
  try {
    const { employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor }, { name: 'Bench', adminEmail: 'admin@bench.test' });
    const { rawKey } = await createApiKey(service.ctx, { tenantId: employerId, actor }, {
      name: 'bench', scopes: ['cohort:write'], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: 100_000_000, createdBy: adminUserId, now: Date.now(),
    });
    await printCohortUploads(service, http, { 'x-api-key': rawKey, 'x-api-version': '2026-02-01' }, label);
  } finally {
    await http.close();
    await service.stopAll();
  }
}
