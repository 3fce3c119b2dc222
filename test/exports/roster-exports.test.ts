// The synchronous exports: the roster as streamed JSON and the PDF report (its text read back with
// unpdf, its first page rendered by poppler's pdftoppm). Erased patients appear in neither.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { extractText, getDocumentProxy } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { exportTenant, rosterOf, uploadPatients, type ExportTenant } from './helpers.ts';

let service: TestService;
let stop: () => Promise<void>;
let tenant: ExportTenant;
let erasedId: string;
let erasedName: string;
const PATIENTS = 130;

beforeAll(async () => {
  ({ service, stop } = await startServiceWithReceiver());
  tenant = await exportTenant(service, 'Acme Roster Exports Ltd');
  await uploadPatients(tenant.api, Array.from({ length: PATIENTS }, (_, i) => ({ email: `roster.${i}@example.test`, firstName: `Given${i}`, lastName: `Family${i}`, birthDate: '1990-01-02' })));
  const [erased] = await rosterOf(tenant.api);
  erasedId = erased.id;
  erasedName = `${erased.lastName}, ${erased.firstName}`;
  expect((await tenant.api.delete(`/api/employer/patients/${erasedId}/personal-data`)).status).toBe(200);
});
afterAll(() => stop?.());

describe('JSON roster export', () => {
  it('streams every patient of the roster, and no erased one', async () => {
    const response = await tenant.fetch('/api/employer/export');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    const body = (await response.json()) as any;
    expect(body).toMatchObject({ employerId: tenant.employerId, generatedAt: expect.any(String), patientCount: PATIENTS - 1 });
    expect(body.patients).toEqual(await rosterOf(tenant.api));
    expect(body.patients.some((patient: any) => patient.id === erasedId)).toBe(false);
  });

  it('is an empty list for an employer without patients', async () => {
    const empty = await exportTenant(service);
    const body = (await (await empty.fetch('/api/employer/export')).json()) as any;
    expect(body).toMatchObject({ employerId: empty.employerId, patientCount: 0, patients: [] });
  });
});

describe('PDF report', () => {
  it("holds the employer, the counts and every patient's name, with the table header on every page", async () => {
    const response = await tenant.fetch('/api/employer/export/pdf');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/pdf');
    expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename=/);
    const bytes = new Uint8Array(await response.arrayBuffer());
    expect(Buffer.from(bytes.subarray(0, 5)).toString()).toBe('%PDF-');

    const pdf = await getDocumentProxy(bytes.slice());
    const { totalPages, text } = await extractText(pdf, { mergePages: false });
    expect(totalPages).toBeGreaterThanOrEqual(3);
    const all = text.join('\n');
    expect(all).toContain('Acme Roster Exports Ltd');
    expect(all).toContain(`Patients: ${PATIENTS - 1}`);
    expect(all).toContain('Cohorts: 1');
    for (const patient of await rosterOf(tenant.api)) expect(all).toContain(`${patient.lastName}, ${patient.firstName}`);
    expect(all).not.toContain(erasedName);
    for (const page of text) expect(page).toContain('E-mail');
  });

  it('renders its first page as an image (pdftoppm)', async (context) => {
    const pdftoppm = await promisify(execFile)('pdftoppm', ['-v']).then(() => true, () => false);
    if (!pdftoppm) {
      console.warn('skipped: pdftoppm (poppler-utils) is not installed on this machine');
      context.skip();
    }
    const dir = await mkdtemp(join(tmpdir(), 'ei-pdf-'));
    await writeFile(join(dir, 'report.pdf'), Buffer.from(await (await tenant.fetch('/api/employer/export/pdf')).arrayBuffer()));
    await promisify(execFile)('pdftoppm', ['-png', '-r', '50', '-f', '1', '-l', '1', '-singlefile', join(dir, 'report.pdf'), join(dir, 'page')]);
    const png = await readFile(join(dir, 'page.png'));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect((await stat(join(dir, 'page.png'))).size).toBeGreaterThan(1000);
  });
});
