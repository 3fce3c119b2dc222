// Employer routes of cohorts (SPEC 4.2): the cohort upload and the list of uploads.
import type { FastifyInstance } from 'fastify';
import { z, type ZodError } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { DomainError } from '../../event-store/decider.ts';
import { notFound } from '../../http/errors.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { cohortSummary, getCohort, listCohorts } from '../../../projections/patients/queries.ts';
import { COHORT_BODY_LIMIT_BYTES, cohortRow, MAX_COHORT_ROWS, type CohortRow } from '../cohort-row.ts';
import { uploadCohort } from '../commands.ts';

const tags = ['Patients'];
const COHORT_UPLOAD_URL = '/api/employer/upload-cohort';
/** An upload answered before its read models caught up: they usually do within a second or two. */
const NOT_YET_READABLE_RETRY_AFTER_SECONDS = 1;
/** The body, the `patients` array and each row with its six fields at most. */
export const COHORT_JSON_VALUES_MAX = 2 + MAX_COHORT_ROWS * 7;

const cohortTooLarge = (maxRows: number) =>
  new DomainError('too_large', 'COHORT_TOO_LARGE', `A cohort upload has at most ${maxRows} rows; this one has more.`, { maxRows });

const cohortResult = z
  .object({ cohortId: z.string(), received: z.number().int(), created: z.number().int(), updated: z.number().int(), unchanged: z.number().int() })
  .meta({ id: 'CohortUploadResult' });

const rowError = z.object({ index: z.number().int(), field: z.string(), path: z.string(), message: z.string() });
type RowError = z.infer<typeof rowError>;

/** Every row checked, every problem listed: one bad row refuses the whole upload. */
function validateRows(rows: unknown[]): CohortRow[] {
  const errors: RowError[] = [];
  const valid: CohortRow[] = [];
  const firstRowOf = new Map<string, number>();
  rows.forEach((row, index) => {
    const parsed = cohortRow.safeParse(row);
    if (!parsed.success) return void errors.push(...rowErrors(index, parsed.error));
    const seen = firstRowOf.get(parsed.data.email);
    if (seen !== undefined) errors.push({ index, field: 'email', path: `body.patients.${index}.email`, message: `duplicate e-mail: the same as row ${seen}` });
    else firstRowOf.set(parsed.data.email, index);
    valid.push(parsed.data);
  });
  if (errors.length > 0) {
    const bad = new Set(errors.map((error) => error.index)).size;
    throw new DomainError('invalid', 'VALIDATION_ERROR', `${bad} of ${rows.length} rows are invalid; nothing was written.`, { errors });
  }
  return valid;
}

function rowErrors(index: number, error: ZodError): RowError[] {
  return error.issues.map((issue) => {
    const field = issue.code === 'unrecognized_keys' ? issue.keys.join(',') : String(issue.path[0] ?? '');
    return { index, field, path: `body.patients.${index}${field ? `.${field}` : ''}`, message: issue.message };
  });
}

export function cohortRoutes(): RoutePlugin {
  return async function cohortRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    // Refused before the body is read, naming the limit (fastify's own message does not).
    fastify.addHook('onRequest', async (request) => {
      if (request.routeOptions.url !== COHORT_UPLOAD_URL) return;
      if (Number(request.headers['content-length'] ?? 0) > COHORT_BODY_LIMIT_BYTES) {
        throw new DomainError('too_large', 'PAYLOAD_TOO_LARGE', `A cohort upload body is at most ${COHORT_BODY_LIMIT_BYTES} bytes (${COHORT_BODY_LIMIT_BYTES / 1024 / 1024} MiB).`, { limitBytes: COHORT_BODY_LIMIT_BYTES });
      }
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: COHORT_UPLOAD_URL,
      summary: 'Upload a cohort: create new patients, update changed ones, all rows or none',
      description:
        `Body \`{ patients: CohortPatient[] }\`, at most ${MAX_COHORT_ROWS} rows (else 413 COHORT_TOO_LARGE) and ${COHORT_BODY_LIMIT_BYTES} bytes (else 413 PAYLOAD_TOO_LARGE). ` +
        `Rows are counted while the body arrives: an upload over the limit is refused once row ${MAX_COHORT_ROWS + 1} is read, before anything is parsed. ` +
        'Every row is checked first: any invalid row, or an e-mail given twice, is a 400 VALIDATION_ERROR whose `errors` list `{ index, field, path, message }` ' +
        'for every bad row, and nothing is written. A patient is identified by e-mail (case-insensitive) within the employer; rows equal to the stored patient ' +
        'count as unchanged, so uploading the same file twice changes nothing. Sends the webhook event cohort.uploaded with this summary as data. ' +
        'A new patient\'s e-mail in a domain another employer has verified (/api/employer/email-domains) is 409 EMAIL_UNAVAILABLE, its `errors` listing those rows; nothing is written. ' +
        '201 comes once every row can be read (roster, FHIR, cohort). 202 (the same body, `Location` the cohort, `Retry-After`) when the upload is written but its read models did ' +
        'not catch up within the service\'s wait: poll `Location` until 200; do not upload again for it (uploading the same file again would change nothing anyway).',
      tags,
      auth: { modes: ['apiKey', 'session'], scope: 'cohort:write' },
      // Rows are checked one by one in the handler (to list every bad row): the array is typed loosely
      // here, and documented as the rows it holds.
      body: z.object({ patients: z.array(z.unknown()).min(1) }),
      documentedBody: z.object({
        patients: z.array(cohortRow).min(1).meta({
          maxItems: MAX_COHORT_ROWS, // past it: 413 COHORT_TOO_LARGE (the handler), not a validation error
          description: 'The patients of the upload; names up to 100 characters, e-mail up to 254.',
        }),
      }),
      bodyLimit: COHORT_BODY_LIMIT_BYTES,
      // Counted while the body arrives: an upload over the row limit is refused after 10,001 rows are
      // scanned, before anything is parsed, and no body holds more values than 10,000 full rows.
      bodyBudget: { values: COHORT_JSON_VALUES_MAX, items: { field: 'patients', max: MAX_COHORT_ROWS, refuse: cohortTooLarge } },
      idempotent: true,
      responses: {
        201: { description: 'What the upload did; every row readable', schema: cohortResult },
        202: { description: 'What the upload did; written, not yet readable everywhere: poll Location (the cohort)', schema: cohortResult },
      },
      handler: async ({ body, principal, request, reply }) => {
        // The scan already refused this unless the body spelled `patients` with escapes.
        if (body.patients.length > MAX_COHORT_ROWS) throw cohortTooLarge(MAX_COHORT_ROWS);
        const rows = validateRows(body.patients);
        const { result, readable } = await uploadCohort(ctx, commandContextOf(principal, request.id), { rows });
        if (readable) reply.status(201);
        else reply.status(202).header('location', `/api/employer/cohorts/${result.cohortId}`).header('retry-after', String(NOT_YET_READABLE_RETRY_AFTER_SECONDS));
        return result;
      },
    });

    const readAuth = { modes: ['apiKey', 'session'], scope: 'cohort:read' } as const;

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/cohorts',
      summary: 'The cohort uploads of the employer, newest first',
      tags,
      auth: readAuth,
      querystring: pageQuery(LIST_PAGE),
      responses: { 200: { description: 'One page of uploads', schema: z.object({ cohorts: z.array(cohortSummary), nextCursor: z.string().nullable() }) } },
      handler: async ({ query, principal }) => {
        const { cohorts, next } = await listCohorts(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor) });
        return { cohorts, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/cohorts/:cohortId',
      summary: 'One cohort upload and its counts',
      tags,
      auth: readAuth,
      params: z.object({ cohortId: z.string().max(64) }),
      responses: { 200: { description: 'The upload', schema: cohortSummary } },
      handler: async ({ params, principal }) => {
        const cohort = await getCohort(ctx.db.slonik, principal.employerId, params.cohortId);
        if (!cohort) throw notFound('Cohort');
        return cohort;
      },
    });
  };
}
