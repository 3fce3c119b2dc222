// FHIR Bulk Data routes (Bulk Data Access IG 2.0, SPEC 4.4): kick-off at [base]/$export,
// [base]/Patient/$export and [base]/Group/{cohortId}/$export (GET, or POST with a Parameters body or
// the same parameters in the query), status and manifest at /api/fhir/bulk-export/{exportId}, its
// NDJSON files, and DELETE to cancel. Errors are OperationOutcomes. The kick-off parameters are the
// IG's: _type, _since, _outputFormat, patient (Patient and Group level), _typeFilter (the search
// parameters of /metadata) and _elements; what it cannot honour is 400, or with `Prefer:
// handling=lenient` ignored and told in the manifest's `error` file. Every patient resource type is in
// the Patient compartment, so the system and patient kick-offs export the same resources; a group's
// are those of the cohort's patients.
//
// Bulk Data is population-level access: API keys with fhir:read and administrators' sessions only.
// A PATIENT session, whose FHIR reads are confined to its own compartment, is refused every one of
// these routes (403 `forbidden`); it reads its records with FHIR search. So an export is seen, read
// and cancelled only by callers who may start one.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { holdsScopeFor, type Principal } from '../../auth/principal.ts';
import { FHIR_PATH } from '../../patients/fhir/interaction.ts';
import { FHIR_CONTENT_TYPE, fhirError, fhirErrorShape } from '../../patients/fhir/outcome.ts';
import { defineRoute } from '../../http/route.ts';
import { acceptJson, type RoutePlugin } from '../../http/server.ts';
import { BULK_FILE_MAX_LINES, bulkOutput, bulkStatusUrl, type BulkRequest } from '../bulk-data.ts';
import { bulkRequestOf, kickOffQuery, parametersBody } from '../bulk-kick-off.ts';
import { getCohort } from '../../../projections/patients/queries.ts';
import { exportLimitsDescription } from '../admission.ts';
import { cancelExport, fileStream, getExport } from '../store.ts';
import { startExport } from '../tasks.ts';

const tags = ['FHIR Bulk Data'];
const auth = { modes: ['apiKey', 'smartToken', 'session'], scope: 'fhir:read', role: 'EMPLOYER_ADMIN' } as const;
/** Said in every Bulk Data route's description, since the spec is silent on it. */
const WHO_MAY_CALL =
  'Needs an API key with fhir:read, a SMART access token granting read (system/*.rs, or per type: an export holds only the types granted), or an EMPLOYER_ADMIN session; a PATIENT session is 403 (OperationOutcome `forbidden`): ' +
  'Bulk Data is population-level, and a patient reads its own compartment with FHIR search. The same callers, and only they, see, download and cancel exports.';
/** What a client is told to wait between polls. */
const RETRY_AFTER_SECONDS = 2;

const exportIdParams = z.object({ exportId: z.string().max(64) });
const groupParams = z.object({ cohortId: z.string().max(100).meta({ description: 'A cohort id (a cohort upload is a Group)' }) });
const fileParams = exportIdParams.extend({ fileName: z.string().max(100) });

/** A SMART access token exports only the types its scopes let it read (403 when none of those asked). */
function grantedTypesOf(principal: Principal, parameters: Omit<BulkRequest, 'url'>): Omit<BulkRequest, 'url'> {
  const types = parameters.types.filter((type) => holdsScopeFor(principal, 'fhir:read', type));
  if (types.length === 0) throw fhirError('forbidden', `The access token may read none of the types asked for (${parameters.types.join(', ')}).`);
  return { ...parameters, types };
}

export function bulkDataRoutes(): RoutePlugin {
  return async function bulkDataRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    acceptJson(fastify, FHIR_CONTENT_TYPE);

    const levels = [
      { path: '', summary: 'Start a FHIR Bulk Data export', group: false },
      { path: '/Patient', summary: 'Start a FHIR Bulk Data export of the Patient compartment', group: false },
      { path: '/Group/:cohortId', summary: "Start a FHIR Bulk Data export of a cohort's patients and their resources", group: true },
    ] as const;
    for (const level of levels) {
      for (const method of ['GET', 'POST'] as const) {
        defineRoute(fastify, ctx, {
          method,
          url: `${FHIR_PATH}${level.path}/$export`,
          summary: level.summary,
          description:
            `Needs \`Prefer: respond-async\`. 202 with \`Content-Location\` = the status URL. ${exportLimitsDescription(ctx.config)} ` +
            `Files are NDJSON, one resource type each, at most ${BULK_FILE_MAX_LINES} resources a file, kept EXPORT_RETENTION_DAYS (7 by default). Erased patients are never exported. ` +
            'A parameter or value it cannot honour is 400, unless `Prefer: handling=lenient`: then it is ignored and the manifest\'s `error` lists a file of OperationOutcomes saying what was.' +
            (level.path === '' ? ' `patient` (POST) is for the Patient and Group levels.' : ' `patient` (POST, valueReference Patient/<id>, repeated) limits the export to those patients.') +
            (level.group ? ' The cohort is a cohort upload of the employer (its current members); an unknown cohort, or another employer\'s, is 404.' : '') +
            ` ${WHO_MAY_CALL}`,
          tags,
          auth,
          errorShape: fhirErrorShape,
          ...(level.group ? { params: groupParams } : {}),
          querystring: kickOffQuery,
          ...(method === 'POST' ? { body: parametersBody } : {}),
          responses: { 202: { description: 'Accepted; poll Content-Location' } },
          handler: async ({ params, query, body, principal, request, reply }) => {
            // Another employer's cohort is 404 whatever the parameters: nothing about it is told.
            const group = level.group ? (params as z.infer<typeof groupParams>).cohortId : undefined;
            if (group !== undefined && !(await getCohort(ctx.db.slonik, principal.employerId, group))) throw fhirError('not_found', `No cohort ${group}.`);
            const parameters = grantedTypesOf(principal, bulkRequestOf(ctx, request, {
              query, body: body as z.infer<typeof parametersBody>, level: level.group ? 'group' : level.path === '' ? 'system' : 'patient', employerId: principal.employerId,
            }));
            const bulkRequest: BulkRequest = { ...parameters, ...(group !== undefined ? { group } : {}), url: `${ctx.config.PUBLIC_BASE_URL}${request.url}` };
            const exportId = randomUUID();
            await startExport(ctx, { employerId: principal.employerId, exportId, kind: 'fhir', request: bulkRequest });
            return reply.status(202).header('content-location', bulkStatusUrl(ctx, exportId)).send();
          },
        });
      }
    }

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: `${FHIR_PATH}/bulk-export/:exportId`,
      summary: 'The status of a FHIR Bulk Data export; its manifest once completed',
      description: `202 with X-Progress and Retry-After while it runs; 200 with the manifest and Expires when completed; 500 OperationOutcome if it failed; 404 once cancelled or for another employer; 410 once expired. ${WHO_MAY_CALL}`,
      tags,
      auth,
      errorShape: fhirErrorShape,
      params: exportIdParams,
      responses: { 200: { description: 'The manifest', schema: z.record(z.string(), z.unknown()) }, 202: { description: 'In progress' } },
      handler: async ({ params, principal, request: httpRequest, reply }) => {
        const row = await getExport(ctx.db.slonik, principal.employerId, params.exportId, 'fhir');
        if (!row || row.status === 'cancelled') throw fhirError('not_found', 'No such bulk export.');
        if (row.status === 'expired') throw fhirError('gone', `This export's files expired at ${row.expires_at}.`);
        if (row.status === 'failed') {
          // Not a refusal of the request but the export's outcome: the Bulk Data IG's 500 OperationOutcome.
          const failure = fhirErrorShape({ status: 500, code: 'EXPORT_FAILED', message: row.failure ?? 'The export failed.', details: {} }, httpRequest);
          return reply.status(500).type(FHIR_CONTENT_TYPE).send(failure.body);
        }
        if (row.status !== 'completed') {
          return reply.status(202).header('x-progress', `${row.progress}%`).header('retry-after', String(RETRY_AFTER_SECONDS)).send();
        }
        const request = row.request as BulkRequest;
        reply.header('expires', new Date(row.expires_at!).toUTCString()).type('application/json');
        return { transactionTime: row.transaction_time, request: request.url, requiresAccessToken: true, ...(await bulkOutput(ctx, row)) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'DELETE',
      url: `${FHIR_PATH}/bulk-export/:exportId`,
      summary: 'Cancel a FHIR Bulk Data export and delete its files',
      description: `404 for another employer's export. ${WHO_MAY_CALL}`,
      tags,
      auth,
      errorShape: fhirErrorShape,
      params: exportIdParams,
      responses: { 202: { description: 'Cancelled' } },
      handler: async ({ params, principal, reply }) => {
        if (!(await cancelExport(ctx.db.slonik, principal.employerId, params.exportId))) throw fhirError('not_found', 'No such bulk export.');
        return reply.status(202).send();
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: `${FHIR_PATH}/bulk-export/:exportId/files/:fileName`,
      summary: 'One NDJSON file of a completed FHIR Bulk Data export',
      description: `404 for another employer's export. ${WHO_MAY_CALL}`,
      tags,
      auth,
      errorShape: fhirErrorShape,
      params: fileParams,
      responses: { 200: { description: 'One resource a line', contentType: 'application/fhir+ndjson', schema: z.string() } },
      handler: async ({ params, principal, reply }) => {
        const row = await getExport(ctx.db.slonik, principal.employerId, params.exportId, 'fhir');
        if (!row || row.status === 'cancelled') throw fhirError('not_found', 'No such bulk export.');
        if (row.status === 'expired') throw fhirError('gone', `This export's files expired at ${row.expires_at}.`);
        if (row.status !== 'completed') throw fhirError('not_found', 'This export has not completed.');
        const exists = await ctx.db.slonik.exists(sql.unsafe`SELECT 1 FROM export_chunks WHERE employer_id = ${principal.employerId} AND export_id = ${row.export_id} AND file_name = ${params.fileName}`);
        if (!exists) throw fhirError('not_found', `No file ${params.fileName} in this export.`);
        return reply.type('application/fhir+ndjson').send(fileStream(ctx.db.slonik, { employerId: principal.employerId, exportId: row.export_id }, params.fileName));
      },
    });
  };
}
