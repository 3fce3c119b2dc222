// One error shape for employer routes: { code, message, requestId } plus documented extra fields.
// FHIR and SCIM routes answer in their own standard shapes (OperationOutcome, SCIM error envelope):
// a route picks its shape with `config.errorShape`. A database that is unreachable or out of
// connections is 503 DATABASE_UNAVAILABLE with Retry-After on every route, in the route's shape.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z, ZodError, type ZodType } from 'zod';
import { DomainError, type ErrorKind } from '../event-store/decider.ts';
import { WrongExpectedRevisionError } from '../event-store/port.ts';
import { isDatabaseUnavailable } from '../db/pools.ts';

export const errorBodySchema = z
  .object({
    code: z.string().meta({ example: 'VALIDATION_ERROR' }),
    message: z.string(),
    requestId: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional().meta({ description: 'VALIDATION_ERROR: the failing fields' }),
  })
  .catchall(z.unknown())
  .meta({ id: 'Error', description: 'Error body of every employer route. Extra fields are documented per code (e.g. INSUFFICIENT_SCOPE carries requiredScopes and keyScopes).' });

/** An error as the service understands it, before a route's shape is applied. */
export type ServiceError = { status: number; code: string; message: string; details: Record<string, unknown>; retryAfterSeconds?: number };

/** Long enough for a pool to free up or a restarting database to come back, short enough to retry soon. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** What /api/openapi says an error body of a shape is: its schema (a registered component) and media type. */
export type DocumentedErrorBody = { schema: ZodType; contentType: string };

/**
 * How a route writes its errors, carrying how /api/openapi documents them (`documented`), so that
 * every route's 4XX responses are derived from the shape it answers in (src/http/openapi.ts).
 * `request` is only the id when no request was parsed (a client error on the connection).
 */
export type ErrorShape = ((error: ServiceError, request: Pick<FastifyRequest, 'id'>) => { body: unknown; contentType?: string }) & { readonly documented: DocumentedErrorBody };

export function errorShape(documented: DocumentedErrorBody, write: (error: ServiceError, request: Pick<FastifyRequest, 'id'>) => { body: unknown; contentType?: string }): ErrorShape {
  return Object.assign(write, { documented });
}

export const defaultErrorShape: ErrorShape = errorShape({ schema: errorBodySchema, contentType: 'application/json' }, (error, request) => ({
  body: { code: error.code, message: error.message, requestId: request.id, ...error.details },
}));

/** The HTTP status of each kind of refusal. */
const STATUS_OF_KIND: Record<ErrorKind, number> = {
  invalid: 400, unauthenticated: 401, forbidden: 403, not_found: 404, not_acceptable: 406, conflict: 409, gone: 410, precondition_failed: 412,
  too_large: 413, unprocessable: 422, too_many: 429, unavailable: 503,
};

/** The kind of refusal an HTTP status stands for (for errors of standards that speak in statuses: SCIM, FHIR). */
export function kindOfStatus(status: number): ErrorKind {
  const kind = (Object.keys(STATUS_OF_KIND) as ErrorKind[]).find((candidate) => STATUS_OF_KIND[candidate] === status);
  if (!kind) throw new Error(`No kind of refusal answers ${status}`);
  return kind;
}

/** VALIDATION_ERROR for one field: the same body as a schema's refusal with one issue. */
export function fieldValidationError(path: string, message: string): DomainError {
  return new DomainError('invalid', 'VALIDATION_ERROR', `Invalid request: ${path}: ${message}`, { errors: [{ path, message }] });
}

export function validationError(error: ZodError, where: string): DomainError {
  const errors = error.issues.map((issue) => ({
    path: [where, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
  return new DomainError('invalid', 'VALIDATION_ERROR', `Invalid request: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, { errors });
}

/** Maps anything thrown in a request to a ServiceError; unknown errors become a bare 500. */
export function toServiceError(error: unknown): ServiceError {
  if (error instanceof DomainError) {
    // A refusal that names its wait (details.retryAfterSeconds) says it in Retry-After too, in every shape.
    const { retryAfterSeconds } = error.details;
    return { status: STATUS_OF_KIND[error.kind], code: error.code, message: error.message, details: error.details, ...(typeof retryAfterSeconds === 'number' ? { retryAfterSeconds } : {}) };
  }
  if (error instanceof WrongExpectedRevisionError) {
    return { status: 409, code: 'CONCURRENT_MODIFICATION', message: 'The resource was changed by another request; retry.', details: {} };
  }
  // Not the client's mistake, and worth retrying: 503 with Retry-After, not a 500.
  if (isDatabaseUnavailable(error)) {
    const message = 'The database is unavailable or busy; retry after the number of seconds in Retry-After.';
    return { status: 503, code: 'DATABASE_UNAVAILABLE', message, details: {}, retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS };
  }
  const fastifyError = error as FastifyError;
  if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    const codes: Record<string, string> = {
      FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
      FST_ERR_CTP_EMPTY_JSON_BODY: 'VALIDATION_ERROR',
      FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_JSON',
      FST_ERR_BAD_URL: 'MALFORMED_URL',
    };
    const code = codes[fastifyError.code] ?? (fastifyError.statusCode === 404 ? 'NOT_FOUND' : 'BAD_REQUEST');
    const message = code === 'MALFORMED_JSON' || fastifyError instanceof SyntaxError ? 'The request body is not valid JSON.' : fastifyError.message;
    return { status: fastifyError.statusCode, code, message, details: {} };
  }
  return { status: 500, code: 'INTERNAL_ERROR', message: 'An unexpected error occurred. It has been logged with the request id.', details: {} };
}

export function sendServiceError(reply: FastifyReply, request: FastifyRequest, error: ServiceError, shape: ErrorShape = defaultErrorShape) {
  const { body, contentType } = shape(error, request);
  if (contentType) reply.type(contentType);
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  return reply.status(error.status).send(body);
}

export function notFound(what: string): DomainError {
  return new DomainError('not_found', 'NOT_FOUND', `${what} was not found.`);
}
