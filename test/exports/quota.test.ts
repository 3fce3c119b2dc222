// The per-employer quota on stored export files (EXPORT_STORAGE_QUOTA_MB): a new export over it is
// refused with a documented error that changes nothing (CSV and FHIR Bulk Data alike), files past
// their expiry no longer count (before the hourly job deletes them), and another employer is not
// affected. A failed export keeps no partial files.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertExport, markFailed } from '../../src/exports/store.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitUntil } from '../webhooks/helpers.ts';
import { exportTenant, uploadPatients, type ExportTenant } from './helpers.ts';

/** About 2 KB: one CSV export of the roster below (some 6 KB) is over it. */
const QUOTA_MB = 0.002;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { EXPORT_STORAGE_QUOTA_MB: String(QUOTA_MB) } });
});
afterAll(async () => service?.stop());

const roster = Array.from({ length: 60 }, (_, i) => ({ email: `quota.${i}@example.test`, firstName: `First${i}`, lastName: `Last${i}` }));

async function startCsv(tenant: ExportTenant) {
  const response = await tenant.fetch('/api/employer/export/csv', { method: 'POST' });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as any };
}

async function completedCsv(tenant: ExportTenant): Promise<string> {
  const started = await startCsv(tenant);
  expect(started.status).toBe(202);
  await waitUntil('the CSV export', async () => (await tenant.api.get(`/api/employer/export/csv/exports/${started.body.exportId}`)).body.status === 'completed');
  return started.body.exportId;
}

const exportCount = (employerId: string) =>
  service.ctx.db.slonik.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM exports WHERE employer_id = ${employerId}`);

describe('export storage quota', () => {
  it('refuses new exports while the stored files are over the quota, and counts what expiry frees', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, roster);
    const first = await completedCsv(tenant);

    const refused = await startCsv(tenant);
    expect(refused.status).toBe(409);
    const expiresAt = (await tenant.api.get(`/api/employer/export/csv/exports/${first}`)).body.expiresAt;
    expect(refused.body).toMatchObject({ code: 'EXPORT_QUOTA_EXCEEDED', quotaBytes: Math.floor(QUOTA_MB * 1024 * 1024), nextExpiry: expiresAt });
    expect(refused.body.usedBytes).toBeGreaterThan(refused.body.quotaBytes);
    expect(refused.body.message).toContain(expiresAt);
    expect(Number(refused.retryAfter)).toBeGreaterThan(6 * 86_400); // the files expire in 7 days
    const kickOff = await tenant.fetch('/api/fhir/$export', { headers: { prefer: 'respond-async' } });
    expect(kickOff.status).toBe(409);
    expect(await kickOff.json()).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'too-costly', diagnostics: expect.stringContaining('MB') }] });
    expect(await exportCount(tenant.employerId)).toBe(1);

    // Another employer's exports are its own affair.
    const other = await exportTenant(service);
    expect((await startCsv(other)).status).toBe(202);

    // Expired files count no more, even before the hourly job has deleted them.
    await service.ctx.db.slonik.query(sql.unsafe`UPDATE exports SET expires_at = now() - interval '1 second' WHERE employer_id = ${tenant.employerId} AND export_id = ${first}`);
    expect(await service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM export_chunks WHERE employer_id = ${tenant.employerId} AND export_id = ${first}`)).toBeGreaterThan(0);
    await completedCsv(tenant);
  });

  it('keeps no partial files of a failed export', async () => {
    const tenant = await exportTenant(service);
    const pool = service.ctx.db.slonik;
    await insertExport(pool, { employerId: tenant.employerId, exportId: 'half-written', kind: 'csv' });
    await pool.query(sql.unsafe`INSERT INTO export_chunks (employer_id, export_id, file_name, seq, line_count, content) VALUES (${tenant.employerId}, 'half-written', 'roster.csv', 0, 1, 'a,b')`);
    await markFailed(pool, tenant.employerId, 'half-written', 'The export could not be written.');
    expect((await tenant.api.get('/api/employer/export/csv/exports/half-written')).body.status).toBe('failed');
    expect(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM export_chunks WHERE employer_id = ${tenant.employerId}`)).toBe(0);
  });
});
