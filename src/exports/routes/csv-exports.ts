// The asynchronous CSV export of the roster (SPEC 4.2): create, status, download. Every export id is
// looked up within the caller's employer: another employer's id is a 404. An export is the employer's,
// not its starter's: its status and file need export:read, which reads the same roster directly
// (GET /api/employer/export), so seeing a file gives no caller more than its scope.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { DomainError } from '../../event-store/decider.ts';
import { notFound } from '../../http/errors.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { exportLimitsDescription } from '../admission.ts';
import { fileStream, getExport, type ExportRow } from '../store.ts';
import { CSV_FILE, startExport } from '../tasks.ts';
import { EXPORT_READ_AUTH, EXPORTS_TAGS } from './roster.ts';

const CSV_EXPORTS_URL = '/api/employer/export/csv/exports';

const csvExportStatus = z
  .object({
    exportId: z.string(),
    status: z.enum(['pending', 'running', 'completed', 'failed', 'expired']),
    progress: z.number().int().min(0).max(100),
    rowCount: z.number().int(),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
  })
  .meta({ id: 'CsvExportStatus' });

const exportIdParams = z.object({ exportId: z.string().max(64) });

function statusOf(row: ExportRow): z.infer<typeof csvExportStatus> {
  return {
    exportId: row.export_id,
    status: row.status === 'cancelled' ? 'failed' : row.status,
    progress: row.progress,
    rowCount: row.row_count,
    createdAt: row.created_at,
    completedAt: row.completed_at,
    expiresAt: row.expires_at,
  };
}

export function csvExportRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/export/csv',
      summary: 'Start a CSV export of the roster',
      description:
        'Answers 202 at once with `Location` = the status URL; a worker writes the file. It is downloadable for EXPORT_RETENTION_DAYS (7 by default) once ' +
        'completed, then answers 410. The webhook event export.ready `{ exportId, kind: "csv", rowCount, downloadUrl }` is sent when it completes. ' +
        'Cells beginning with =, +, -, @, tab or carriage return are prefixed with an apostrophe (formula injection). ' +
        exportLimitsDescription(ctx.config),
      tags: EXPORTS_TAGS,
      auth: { modes: ['apiKey', 'session'], scope: 'export:create' },
      idempotent: true,
      responses: {
        202: { description: 'Queued', schema: z.object({ exportId: z.string(), status: z.literal('pending') }) },
        409: { description: 'EXPORT_QUOTA_EXCEEDED: the stored export files of the employer are over its quota' },
        429: { description: 'TOO_MANY_EXPORTS_IN_FLIGHT: the employer has EXPORT_CSV_MAX_IN_FLIGHT CSV exports pending or running' },
      },
      handler: async ({ principal, reply }) => {
        const exportId = randomUUID();
        await startExport(ctx, { employerId: principal.employerId, exportId, kind: 'csv' });
        reply.status(202).header('location', `${ctx.config.PUBLIC_BASE_URL}${CSV_EXPORTS_URL}/${exportId}`);
        return { exportId, status: 'pending' as const };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: `${CSV_EXPORTS_URL}/:exportId`,
      summary: 'The state of a CSV export',
      description: "Any export of the employer, whoever started it, for an API key with export:read or an administrator's session; another employer's is 404.",
      tags: EXPORTS_TAGS,
      auth: EXPORT_READ_AUTH,
      params: exportIdParams,
      responses: { 200: { description: 'Its state', schema: csvExportStatus } },
      handler: async ({ params, principal }) => {
        const row = await getExport(ctx.db.slonik, principal.employerId, params.exportId, 'csv');
        if (!row) throw notFound('Export');
        return statusOf(row);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: `${CSV_EXPORTS_URL}/:exportId/download`,
      summary: 'Download a completed CSV export',
      description: '`text/csv; charset=utf-8`, streamed. 409 EXPORT_NOT_READY until it is completed (or when it failed), 410 EXPORT_EXPIRED after its expiry. ' +
        "Callers as for the export's state (export:read, which reads the same roster at GET /api/employer/export); another employer's is 404.",
      tags: EXPORTS_TAGS,
      auth: EXPORT_READ_AUTH,
      params: exportIdParams,
      responses: { 200: { description: 'The CSV file (header row, then one row per patient)', contentType: 'text/csv', schema: z.string() } },
      handler: async ({ params, principal, reply }) => {
        const row = await getExport(ctx.db.slonik, principal.employerId, params.exportId, 'csv');
        if (!row) throw notFound('Export');
        if (row.status === 'expired') throw new DomainError('gone', 'EXPORT_EXPIRED', `This export expired at ${row.expires_at}; start a new one.`);
        if (row.status !== 'completed') throw new DomainError('conflict', 'EXPORT_NOT_READY', `This export is ${statusOf(row).status}; download it once it is completed.`, { status: statusOf(row).status });
        reply.header('content-disposition', `attachment; filename="roster-${row.export_id}.csv"`);
        return reply.type('text/csv; charset=utf-8').send(fileStream(ctx.db.slonik, { employerId: principal.employerId, exportId: row.export_id }, CSV_FILE));
      },
    });
  };
}
