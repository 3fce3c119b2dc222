// The roster of an employer as it is now, streamed (SPEC 4.2): as JSON and as a PDF report. Both need
// export:read; a PATIENT session holds no export scope (403).
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { rosterPatient } from '../../../projections/patients/queries.ts';
import { employerReport } from '../pdf.ts';
import { countPatients, rosterPages } from '../roster.ts';

export const EXPORTS_TAGS = ['Exports'];
/** Who reads the roster, and so any export of it. */
export const EXPORT_READ_AUTH = { modes: ['apiKey', 'session'], scope: 'export:read' } as const;

const rosterExport = z
  .object({ employerId: z.string(), generatedAt: z.string(), patientCount: z.number().int(), patients: z.array(rosterPatient) })
  .meta({ id: 'RosterExport' });

/** `{ employerId, generatedAt, patientCount, patients: [` then one keyset page at a time, then `]}`. */
async function* rosterJson(ctx: AppContext, employerId: string) {
  const patientCount = await countPatients(ctx.db.slonik, employerId);
  yield `{"employerId":${JSON.stringify(employerId)},"generatedAt":"${new Date().toISOString()}","patientCount":${patientCount},"patients":[`;
  let first = true;
  for await (const page of rosterPages(ctx.db.slonik, employerId)) {
    if (page.patients.length === 0) continue;
    yield (first ? '' : ',') + page.patients.map((patient) => JSON.stringify(patient)).join(',');
    first = false;
  }
  yield ']}';
}

export function rosterRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/export',
      summary: 'The roster as JSON, streamed',
      description:
        'Every patient of the employer (erased patients never), newest first, streamed page by page so memory stays flat whatever the roster size. ' +
        '`patientCount` is counted when the export starts; patients registered while it streams may be missing from `patients`.',
      tags: EXPORTS_TAGS,
      auth: EXPORT_READ_AUTH,
      responses: { 200: { description: 'The roster', schema: rosterExport } },
      handler: async ({ principal, reply }) => {
        reply.header('content-disposition', 'attachment; filename="roster.json"');
        return reply.type('application/json; charset=utf-8').send(Readable.from(rosterJson(ctx, principal.employerId)));
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/export/pdf',
      summary: 'A PDF report of the employer, streamed',
      description: 'Employer name, generation time, counts (patients, cohorts, active API keys, active webhooks) and the roster as a table (name, e-mail, birth date, external id) whose header repeats on every page.',
      tags: EXPORTS_TAGS,
      auth: EXPORT_READ_AUTH,
      responses: { 200: { description: 'The report', contentType: 'application/pdf', schema: z.string() } },
      handler: async ({ principal, reply }) => {
        reply.header('content-disposition', 'attachment; filename="employer-report.pdf"');
        return reply.type('application/pdf').send(employerReport(ctx.db.slonik, principal.employerId));
      },
    });
  };
}
