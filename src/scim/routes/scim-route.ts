// What the SCIM routes share: the base path and media type, errors in the SCIM envelope, a route
// definer for routes under the base (the SCIM token, checked by the plugin's hook), list and attribute
// selection queries, and If-Match.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { DomainError } from '../../event-store/decider.ts';
import { errorShape, kindOfStatus, type ServiceError } from '../../http/errors.ts';
import { SCIM_PATCH_SCHEMAS_MAX, SCIM_QUERY_MAX, URL_MAX } from '../../http/limits.ts';
import { defineRoute, type RouteDefinition, type RouteResponses } from '../../http/route.ts';
import type { ListQuery } from '../../../projections/scim-list-page.ts';
import { attributeListSchema } from '../attributes.ts';
import type { IfMatch, ScimCaller } from '../commands.ts';
import { SCIM_MAX_RESULTS } from '../discovery.ts';
import { SCIM_ERROR_SCHEMA, SCIM_ERROR_TYPES, ScimError, toScimErrorBody, type ScimErrorType } from '../errors.ts';
import { scimFilterToSql, type ScimAttributeMap } from '../filter.ts';
import type { ScimWriter } from '../read-your-writes.ts';
import { etagOf } from '../resources.ts';

export const SCIM_PATH = '/api/scim/v2';
export const SCIM_CONTENT_TYPE = 'application/scim+json';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the SCIM plugin's authentication hook. */
    scimCaller?: ScimCaller;
  }
}

/** Error codes of the service's own errors that have a SCIM type (RFC 7644 table 9). */
const SCIM_TYPES_BY_CODE: Record<string, ScimErrorType> = {
  VALIDATION_ERROR: 'invalidValue',
  MALFORMED_JSON: 'invalidSyntax',
  EMAIL_UNAVAILABLE: 'uniqueness',
};

/** The SCIM error envelope (RFC 7644 section 3.12), as /api/openapi documents it. */
const scimErrorSchema = z
  .object({
    schemas: z.tuple([z.literal(SCIM_ERROR_SCHEMA)]),
    status: z.string().meta({ description: 'The HTTP status, as a string' }),
    scimType: z.enum(SCIM_ERROR_TYPES).optional().meta({ description: 'RFC 7644 table 9; on 400 and 409 errors only' }),
    detail: z.string(),
  })
  .meta({ id: 'ScimError', description: 'The error body of every route under /api/scim/v2 (RFC 7644 section 3.12).' });

export const scimErrorShape = errorShape({ schema: scimErrorSchema, contentType: SCIM_CONTENT_TYPE }, (error: ServiceError) => {
  const scimType = (error.details.scimType as ScimErrorType | undefined) ?? SCIM_TYPES_BY_CODE[error.code] ?? null;
  return { contentType: SCIM_CONTENT_TYPE, body: toScimErrorBody(new ScimError(error.status, scimType, error.message)) };
});

/** A ScimError from the SCIM modules as the DomainError the service's error handler knows. */
function asServiceError(error: unknown): unknown {
  if (!(error instanceof ScimError)) return error;
  return new DomainError(kindOfStatus(error.status), error.scimType ? `SCIM_${error.scimType}` : 'SCIM_ERROR', error.message, error.scimType ? { scimType: error.scimType } : {});
}

/** Every SCIM route needs the employer's SCIM token, which the plugin's onRequest hook checks (plugin.ts). */
const scimAuth = { checkedByRoute: 'scimToken' } as const;
type ScimAuth = typeof scimAuth;

type ScimRouteDefinition<Body extends z.ZodType | undefined, Params extends z.ZodType | undefined, Query extends z.ZodType | undefined> =
  Omit<RouteDefinition<Body, Params, Query, ScimAuth>, 'auth' | 'tags' | 'errorShape' | 'responses'> & { responses?: RouteDefinition<Body, Params, Query, ScimAuth>['responses'] };

/** What each resource's routes are given by the SCIM plugin. */
export type ScimRouting = {
  ctx: AppContext;
  writer: ScimWriter;
  /** The absolute base URL (PUBLIC_BASE_URL + SCIM_PATH), for `location` and `meta.location`. */
  baseUrl: string;
  route: <Body extends z.ZodType | undefined, Params extends z.ZodType | undefined, Query extends z.ZodType | undefined>(definition: ScimRouteDefinition<Body, Params, Query>) => void;
};

/** What a SCIM write may answer besides what every route does (src/http/openapi.ts derives those). */
function writeRefusals(method: RouteDefinition<undefined, undefined, undefined, ScimAuth>['method']): RouteResponses {
  const methods = [method].flat();
  const refusals: RouteResponses = {};
  if (methods.some((one) => ['POST', 'PUT', 'PATCH'].includes(one))) refusals[409] = { description: 'uniqueness: a user\'s userName or e-mail is taken; or the resource changed meanwhile (retry)' };
  if (methods.some((one) => ['PUT', 'PATCH', 'DELETE'].includes(one))) refusals[412] = { description: 'If-Match names a version that is no longer the current one' };
  return refusals;
}

/** Defines a route under SCIM_PATH: SCIM errors, SCIM media type, documented under the SCIM tag. */
export function scimRouteDefiner(fastify: FastifyInstance, ctx: AppContext): ScimRouting['route'] {
  return (definition) =>
    defineRoute(fastify, ctx, {
      ...definition,
      url: `${SCIM_PATH}${definition.url}`,
      aliases: definition.aliases?.map((alias) => `${SCIM_PATH}${alias}`),
      tags: ['SCIM'],
      auth: scimAuth,
      errorShape: scimErrorShape,
      responses: { ...writeRefusals(definition.method), ...(definition.responses ?? { 200: { description: 'SCIM resource', contentType: SCIM_CONTENT_TYPE } }) },
      handler: async (input) => {
        try {
          return await definition.handler(input);
        } catch (error) {
          throw asServiceError(error);
        }
      },
    });
}

export const callerOf = (request: FastifyRequest): ScimCaller => request.scimCaller!;

export const listQuery = z.object({
  filter: z
    .string()
    .max(SCIM_QUERY_MAX)
    .optional()
    .transform((filter) => (filter?.trim() ? filter : undefined)),
  startIndex: z.coerce.number().int().default(1),
  count: z.coerce.number().int().default(SCIM_MAX_RESULTS),
  attributes: attributeListSchema.optional(),
  excludedAttributes: attributeListSchema.optional(),
});
/** A list request as the read-model query takes it: the filter translated to SQL, the count capped. */
export function readModelQuery(query: z.infer<typeof listQuery>, attributes: ScimAttributeMap): ListQuery {
  return {
    filter: query.filter === undefined ? null : scimFilterToSql(query.filter, attributes),
    startIndex: query.startIndex,
    count: Math.min(query.count, SCIM_MAX_RESULTS),
  };
}

export const SCIM_SEARCH_REQUEST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

/** Names in a search request's attribute lists: the joined list is bounded like the query parameter. */
const attributeNames = z.array(z.string().max(SCIM_QUERY_MAX)).max(100).transform((names) => names.join(','));

/**
 * The body of POST .search (RFC 7644 section 3.4.3): the list query's parameters, `attributes` and
 * `excludedAttributes` as arrays of names; read into the same list query a GET takes.
 */
export const searchRequestSchema = z.object({
  schemas: z.array(z.string().max(URL_MAX)).max(SCIM_PATCH_SCHEMAS_MAX).refine((schemas) => schemas.includes(SCIM_SEARCH_REQUEST_SCHEMA), {
    message: `schemas must contain ${SCIM_SEARCH_REQUEST_SCHEMA}`,
  }),
  filter: listQuery.shape.filter,
  startIndex: z.number().int().default(1),
  count: z.number().int().default(SCIM_MAX_RESULTS),
  attributes: attributeNames.pipe(attributeListSchema).optional(),
  excludedAttributes: attributeNames.pipe(attributeListSchema).optional(),
});
export type ListRequest = z.infer<typeof listQuery>;

export const selectionQuery = listQuery.pick({ attributes: true, excludedAttributes: true });
export type AttributeSelection = z.infer<typeof selectionQuery>;

export function send(reply: FastifyReply, status: number, body: unknown) {
  return reply.status(status).type(SCIM_CONTENT_TYPE).send(body);
}

/**
 * If-Match (RFC 7644 section 3.14) as a condition on the resource's stream revision, which its ETag
 * names: the write is appended at that revision or not at all (412).
 */
export function ifMatchOf(request: FastifyRequest): IfMatch {
  const header = request.headers['if-match'];
  if (header === undefined || header.trim() === '*') return undefined;
  const revisions = header.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
  return (revision) => revisions.includes(etagOf(Number(revision)).slice(2));
}

/**
 * If-None-Match (RFC 7644 section 3.14, RFC 9110 section 13.1.2) on a GET: true when it names the
 * resource's current version (or is *), which then answers 304 without a body.
 */
export function isNotModified(request: FastifyRequest, version: number): boolean {
  const header = request.headers['if-none-match'];
  if (request.method !== 'GET' || header === undefined) return false;
  const current = etagOf(version).slice(2);
  return header.split(',').some((tag) => tag.trim() === '*' || tag.trim().replace(/^W\//, '') === current);
}

export function notFound(resourceType: 'User' | 'Group', id: string): ScimError {
  return new ScimError(404, null, `${resourceType} ${id} not found.`);
}
