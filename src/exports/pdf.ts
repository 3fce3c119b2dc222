// The employer's PDF report (pdfkit, no browser): employer name, generation time, counts, and the
// roster as a table whose header repeats on every page. Written while it streams: pdfkit emits each
// page as it is finished, and the writer waits whenever the client has not read what was emitted, so
// memory holds about one page of rows and one page of output.
import { once } from 'node:events';
import PDFDocument from 'pdfkit';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { activeApiKey } from '../../projections/api-keys/queries.ts';
import { countPatients, rosterPages, type RosterPatient } from './roster.ts';

const MARGIN = 40;
const ROW_HEIGHT = 16;
const COLUMNS: Array<{ title: string; width: number; value: (patient: RosterPatient) => string }> = [
  { title: 'Name', width: 170, value: (p) => [p.lastName, p.firstName].filter(Boolean).join(', ') },
  { title: 'E-mail', width: 200, value: (p) => p.email ?? '' },
  { title: 'Birth date', width: 70, value: (p) => p.birthDate ?? '' },
  { title: 'External id', width: 75, value: (p) => p.externalId ?? '' },
];
/** Output the client has not read yet beyond which writing waits. */
const BACKLOG_BYTES = 1 << 20;

const counts = z.object({ name: z.string(), cohorts: z.number(), active_keys: z.number(), webhooks: z.number() });

async function reportHeader(pool: CommonQueryMethods, employerId: string) {
  const row = await pool.one(sql.type(counts)`
    SELECT name,
      (SELECT count(*)::int FROM cohorts WHERE employer_id = ${employerId}) AS cohorts,
      (SELECT count(*)::int FROM api_keys k WHERE k.employer_id = ${employerId} AND ${activeApiKey(sql.fragment`now()`)}) AS active_keys,
      (SELECT count(*)::int FROM webhook_subscriptions WHERE employer_id = ${employerId} AND status = 'active') AS webhooks
    FROM employers WHERE id = ${employerId}`);
  return { ...row, patients: await countPatients(pool, employerId) };
}

/** The report as a readable PDF stream; rows are read and drawn while the client downloads. */
export function employerReport(pool: CommonQueryMethods, employerId: string): PDFKit.PDFDocument {
  const doc = new PDFDocument({ size: 'A4', margin: MARGIN, info: { Title: 'Employer report', Producer: 'employer-integrations' } });
  void (async () => {
    try {
      await drawReport(doc, pool, employerId);
    } catch (error) {
      doc.destroy(error as Error);
    }
  })();
  return doc;
}

async function drawReport(doc: PDFKit.PDFDocument, pool: CommonQueryMethods, employerId: string) {
  const header = await reportHeader(pool, employerId);
  doc.font('Helvetica-Bold').fontSize(18).text(header.name);
  doc.font('Helvetica').fontSize(10).text(`Generated ${new Date().toISOString()}`).moveDown();
  doc.text(`Patients: ${header.patients}    Cohorts: ${header.cohorts}    Active API keys: ${header.active_keys}    Webhooks: ${header.webhooks}`).moveDown();

  const bottom = doc.page.height - MARGIN - ROW_HEIGHT;
  let y = doc.y;
  const drawRow = (cells: string[], bold: boolean) => {
    doc.font(bold ? 'Helvetica-Bold' : 'Helvetica').fontSize(9);
    let x = MARGIN;
    cells.forEach((cell, i) => {
      doc.text(cell, x, y, { width: COLUMNS[i]!.width - 6, height: ROW_HEIGHT, lineBreak: false, ellipsis: true });
      x += COLUMNS[i]!.width;
    });
    y += ROW_HEIGHT;
  };
  const drawTableHeader = () => {
    drawRow(COLUMNS.map((column) => column.title), true);
    doc.moveTo(MARGIN, y - 3).lineTo(MARGIN + COLUMNS.reduce((sum, column) => sum + column.width, 0), y - 3).stroke();
  };
  drawTableHeader();
  for await (const page of rosterPages(pool, employerId)) {
    for (const patient of page.patients) {
      if (y > bottom) {
        doc.addPage();
        y = MARGIN;
        drawTableHeader();
      }
      drawRow(COLUMNS.map((column) => column.value(patient)), false);
    }
    while (doc.readableLength > BACKLOG_BYTES && !doc.destroyed) await Promise.race([once(doc, 'data'), once(doc, 'close')]);
    if (doc.destroyed) return;
  }
  doc.end();
}
