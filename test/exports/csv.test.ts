// The CSV export end to end: 202 and Location, polling to completion, a download that csv-parse reads
// back to the roster with formula payloads neutralised, 409 before completion, 410 and the cleanup job
// after expiry, export.ready at a real HTTPS receiver, and another employer's 404 for every export id.
import { parse } from 'csv-parse/sync';
import { sql } from 'slonik';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CSV_COLUMNS, rosterCsvLine } from '../../src/exports/csv.ts';
import { insertExport, markFailed } from '../../src/exports/store.ts';
import { webhookDataSchemas } from '../../src/webhooks/payloads.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { subscribe, waitUntil } from '../webhooks/helpers.ts';
import { exportTenant, rosterOf, uploadPatients, type ExportTenant } from './helpers.ts';

let service: TestService;
let receiver: HttpsReceiver;
let stop: () => Promise<void>;
beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver()));
afterAll(() => stop?.());

const injectionPatients = [
  { email: 'formula@example.test', firstName: '=HYPERLINK("http://evil.test","click")', lastName: '@SUM(A1:A9)', externalId: '-2+3', phone: '+1 555 0100' },
  { email: 'quotes@example.test', firstName: 'Anne, "Nan"', lastName: "O'Brien\nJr", birthDate: '1970-05-06' },
];

async function completedExport(tenant: ExportTenant, idempotencyKey: string) {
  const started = await tenant.fetch('/api/employer/export/csv', { method: 'POST', headers: { 'idempotency-key': idempotencyKey } });
  expect(started.status).toBe(202);
  const body = (await started.json()) as any;
  expect(body).toEqual({ exportId: expect.any(String), status: 'pending' });
  expect(started.headers.get('location')).toBe(`${service.url}/api/employer/export/csv/exports/${body.exportId}`);
  const status = await waitUntil('the CSV export', async () => {
    const polled = await tenant.api.get(`/api/employer/export/csv/exports/${body.exportId}`);
    return polled.body.status === 'completed' && polled.body;
  });
  return { exportId: body.exportId as string, status };
}

describe('CSV export', () => {
  it('completes, and its download parses back to the roster with formula cells neutralised', async () => {
    const tenant = await exportTenant(service);
    const bulk = Array.from({ length: 2_345 }, (_, i) => ({ email: `csv.${i}@example.test`, firstName: `First${i}`, lastName: `Last${i}` }));
    await uploadPatients(tenant.api, bulk);
    await uploadPatients(tenant.api, injectionPatients);

    const { exportId, status } = await completedExport(tenant, 'csv-1');
    expect(status).toMatchObject({ exportId, status: 'completed', progress: 100, rowCount: 2_347, createdAt: expect.any(String), completedAt: expect.any(String) });
    expect(Date.parse(status.expiresAt) - Date.parse(status.completedAt)).toBe(7 * 86_400_000);

    const download = await tenant.fetch(`/api/employer/export/csv/exports/${exportId}/download`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const text = await download.text();
    expect(text.endsWith('\r\n')).toBe(true);
    const records = parse(text, { columns: true }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual([...CSV_COLUMNS]);

    const roster = await rosterOf(tenant.api);
    const neutralised = (cell: string) => (/^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell);
    const expected = roster.map((patient) => Object.fromEntries(CSV_COLUMNS.map((column) => [column, neutralised(patient[column] ?? '')])));
    expect(records).toEqual(expected);

    const formula = records.find((record) => record.email === 'formula@example.test')!;
    expect(formula).toMatchObject({ firstName: `'=HYPERLINK("http://evil.test","click")`, lastName: `'@SUM(A1:A9)`, externalId: `'-2+3`, phone: `'+1 555 0100` });
    expect(records.find((record) => record.email === 'quotes@example.test')).toMatchObject({ firstName: 'Anne, "Nan"', lastName: "O'Brien\nJr" });
    expect(records.every((record) => !/^[=+\-@\t\r]/.test(Object.values(record).join('')))).toBe(true);

    // The same Idempotency-Key answers the same export.
    const again = await tenant.fetch('/api/employer/export/csv', { method: 'POST', headers: { 'idempotency-key': 'csv-1' } });
    expect(((await again.json()) as any).exportId).toBe(exportId);
  });

  it('neutralises cells beginning with a tab or a carriage return too, and formulas that hold a line break; quotes what RFC 4180 asks', async () => {
    // The line Postgres builds for an export, over one roster row with these fields.
    const line = await service.ctx.db.slonik.oneFirst(sql.type(z.object({ line: z.string() }))`
      SELECT ${rosterCsvLine} AS line FROM (VALUES ('-p1', 'a@example.test', E'\tcmd', E'\r=1', NULL, E'=1+1\n2', ' plain = text', 'c', 'u'))
        AS page(id, email, first_name, last_name, birth_date, external_id, phone, created_iso, updated_iso)`);
    const [record] = parse(line, { columns: [...CSV_COLUMNS] }) as Record<string, string>[];
    expect(record).toEqual({ id: "'-p1", email: 'a@example.test', firstName: "'\tcmd", lastName: "'\r=1", birthDate: '', externalId: "'=1+1\n2", phone: ' plain = text', createdAt: 'c', updatedAt: 'u' });
    expect(line).toContain('," plain = text",');
  });

  it('answers 409 before completion, 410 after expiry, and the cleanup job deletes expired files', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, [{ email: 'one@example.test', firstName: 'One', lastName: 'Patient' }]);

    // An export the worker has not run yet (queued without a job, so it stays pending).
    const pending = await insertExport(service.ctx.db.slonik, { employerId: tenant.employerId, exportId: 'not-run-yet', kind: 'csv' });
    const early = await tenant.api.get(`/api/employer/export/csv/exports/${pending.export_id}/download`);
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ code: 'EXPORT_NOT_READY', status: 'pending', requestId: expect.any(String) });
    // It ends, so the employer's one CSV export in flight (EXPORT_CSV_MAX_IN_FLIGHT) may be the next.
    await markFailed(service.ctx.db.slonik, tenant.employerId, pending.export_id, 'Never run.');

    const { exportId } = await completedExport(tenant, 'csv-expiry');
    await service.ctx.db.slonik.query(sql.unsafe`UPDATE exports SET expires_at = now() - interval '1 second' WHERE employer_id = ${tenant.employerId} AND export_id = ${exportId}`);
    const gone = await tenant.api.get(`/api/employer/export/csv/exports/${exportId}/download`);
    expect(gone.status).toBe(410);
    expect(gone.body.code).toBe('EXPORT_EXPIRED');
    expect((await tenant.api.get(`/api/employer/export/csv/exports/${exportId}`)).body.status).toBe('expired');

    await service.ctx.db.slonik.query(sql.unsafe`SELECT graphile_worker.add_job('export_delete_expired')`);
    await waitUntil('the expired files deleted', async () =>
      (await service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM export_chunks WHERE employer_id = ${tenant.employerId} AND export_id = ${exportId}`)) === 0);
    expect((await tenant.api.get(`/api/employer/export/csv/exports/${exportId}/download`)).status).toBe(410);
  });

  it('delivers export.ready, signed, with the download URL', async () => {
    const tenant = await exportTenant(service);
    await uploadPatients(tenant.api, [{ email: 'ready@example.test', firstName: 'Ready', lastName: 'Patient' }]);
    const { secret } = await subscribe(tenant.api, `${receiver.url}/exports-${tenant.employerId}`, { events: ['export.ready'] });
    const { exportId } = await completedExport(tenant, 'csv-ready');
    const received = await waitUntil('export.ready', () => receiver.requests.find((request) => request.path === `/exports-${tenant.employerId}`));
    const headers = { 'webhook-id': String(received.headers['webhook-id']), 'webhook-timestamp': String(received.headers['webhook-timestamp']), 'webhook-signature': String(received.headers['webhook-signature']) };
    const payload = new Webhook(secret).verify(received.body, headers) as any;
    const downloadUrl = `${service.url}/api/employer/export/csv/exports/${exportId}/download`;
    expect(payload).toMatchObject({ event: 'export.ready', employerId: tenant.employerId, data: { exportId, kind: 'csv', rowCount: 1, downloadUrl } });
    // The data is what /api/openapi documents under webhooks.
    expect(webhookDataSchemas['export.ready'].strict().safeParse(payload.data).success).toBe(true);
    expect((await tenant.fetch(downloadUrl.slice(service.url.length))).status).toBe(200);
  });

  it('answers 404 to another employer for the status and the download of an export', async () => {
    const owner = await exportTenant(service);
    const other = await exportTenant(service);
    const { exportId } = await completedExport(owner, 'csv-owner');
    for (const path of [`/api/employer/export/csv/exports/${exportId}`, `/api/employer/export/csv/exports/${exportId}/download`]) {
      const response = await other.api.get(path);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('NOT_FOUND');
    }
  });
});
