// FHIR R4 under /api/fhir (SPEC 4.4): metadata, and for each resource type read, vread, search (GET
// and POST _search), create (conditional with If-None-Exist) and update (If-Match against the stream
// revision). JSON only (application/fhir+json, application/json, _format=json): XML is 406 (Accept)
// or 415 (Content-Type). Errors are OperationOutcomes (outcome.ts). 120 requests a minute per employer.
// A PATIENT session reads only its own compartment (compartment.ts).
import type { Bundle } from '@medplum/fhirtypes';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { dataKey, openPersonal, PersonalDataErasedError } from '../crypto/personal-data.ts';
import { commandContextOf, type Principal, type RouteAuth } from '../auth/principal.ts';
import { defineRoute, type RouteDefinition } from '../http/route.ts';
import { acceptJson, type RoutePlugin } from '../http/server.ts';
import { assertAllowed, createTokenBuckets } from '../http/token-buckets.ts';
import { FHIR_JSON_VALUES_MAX } from '../http/limits.ts';
import { findResource } from '../../projections/fhir-resources/queries.ts';
import { createFhirResource, patientStream, resourceStream, updateFhirResource, type WrittenVersion } from '../patients/commands.ts';
import { sealContext } from '../patients/events.ts';
import { gone } from '../patients/patient.ts';
import { buildCapabilityStatement } from './capability-statement.ts';
import { compartmentCondition, compartmentOf } from './compartment.ts';
import { FHIR_CONTENT_TYPE, fhirError, fhirErrorShape } from './outcome.ts';
import { contentOf, withMeta } from './resource.ts';
import { encodeSearchCursor, MAX_COUNT, parseSearch, runSearch, type QueryParameters, type SearchRequest } from './search.ts';
import { FHIR_RESOURCE_TYPES, isFhirResourceType, type FhirJson, type FhirResourceType } from './search-parameters.ts';
import { assertValidResource, loadFhirDefinitions } from './validate.ts';

export const FHIR_PATH = '/api/fhir';

const readAuth = { modes: ['apiKey', 'session'], scope: 'fhir:read' } as const;
const writeAuth = { modes: ['apiKey', 'session'], scope: 'fhir:write' } as const;
const tags = ['FHIR'];

const JSON_FORMATS = new Set(['json', 'application/json', 'application/fhir+json']);
const VERSIONED_EVENTS = new Set(['PatientRegistered', 'PatientUpdated', 'ClinicalResourceCreated', 'ClinicalResourceUpdated']);

const id = z.string().max(64).regex(/^[A-Za-z0-9.-]{1,64}$/, 'a FHIR id: 1 to 64 letters, digits, - and .');
const typeParams = z.object({ resourceType: z.string().max(64).meta({ description: FHIR_RESOURCE_TYPES.join(', ') }) });
const resourceParams = typeParams.extend({ id });
const versionParams = resourceParams.extend({ versionId: z.string().max(9).regex(/^[1-9]\d{0,8}$/, 'a version number') });
const searchValue = z.union([z.string().max(2000), z.array(z.string().max(2000)).max(20)]);
const searchQuery = z
  .object({
    _count: z.string().max(10).optional().meta({ description: `Page size, default 20, at most ${MAX_COUNT} (larger values are capped); 0 gives only the total.` }),
    _sort: z.string().max(20).optional().meta({ description: '_lastUpdated (default) or -_lastUpdated' }),
    _cursor: z.string().max(400).optional().meta({ description: 'Paging state; taken from a next or previous link, never made up.' }),
  })
  .catchall(searchValue)
  .meta({ description: "Search parameters of the type (see /api/fhir/metadata); unknown ones are 400 'invalid'." });
const resourceBody = z.record(z.string().max(100), z.unknown()).meta({ description: 'A FHIR R4 resource of the type in the path (validated against the R4 StructureDefinitions).' });
const fhirResponse = (description: string) => ({ description, contentType: FHIR_CONTENT_TYPE, schema: z.record(z.string(), z.unknown()) });

const acceptsJson = (accept: string) =>
  accept.split(',').some((range) => {
    const type = range.split(';')[0]!.trim().toLowerCase();
    return type === '*/*' || type === 'application/*' || type.endsWith('json');
  });

export function fhirRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    // Errors raised before a route is found (a path that does not decode, headers over the limit) too.
    fastify.errorShapesByPrefix.set('/api/fhir', fhirErrorShape);
    const base = `${ctx.config.PUBLIC_BASE_URL}${FHIR_PATH}`;
    // The R4 definitions are indexed once, when the API starts (not in other roles, nor in the CLI).
    await loadFhirDefinitions();
    const capability = buildCapabilityStatement(base, new Date().toISOString());
    const limit = ctx.config.FHIR_RATE_LIMIT_PER_MIN;
    const buckets = createTokenBuckets({ perSecond: limit / 60, burst: limit });

    acceptJson(fastify, FHIR_CONTENT_TYPE);
    fastify.addHook('onRequest', async (request) => {
      const format = (request.query as Record<string, unknown>)._format;
      if (format !== undefined && !(typeof format === 'string' && JSON_FORMATS.has(format))) throw fhirError(406, 'Only JSON is supported: _format=json.');
      const accept = request.headers.accept;
      if (accept && !acceptsJson(accept)) throw fhirError(406, `Only ${FHIR_CONTENT_TYPE} (or application/json) is supported; Accept was ${accept}.`);
    });

    const route = <Body extends z.ZodType | undefined, Params extends z.ZodType | undefined, Query extends z.ZodType | undefined, Auth extends RouteAuth>(
      definition: Omit<RouteDefinition<Body, Params, Query, Auth>, 'tags' | 'errorShape'>,
    ) =>
      defineRoute(fastify, ctx, {
        ...definition,
        url: `${FHIR_PATH}${definition.url}`,
        tags,
        errorShape: fhirErrorShape,
        bodyBudget: { values: FHIR_JSON_VALUES_MAX },
        handler: async (input) => {
          const { employerId } = input.principal as Principal;
          assertAllowed(buckets.take(employerId), input.reply, `More than ${limit} FHIR requests a minute for this employer`);
          input.reply.type(FHIR_CONTENT_TYPE);
          return definition.handler(input);
        },
      });

    route({
      method: 'GET',
      url: '/metadata',
      summary: 'The CapabilityStatement: resource types, interactions and search parameters',
      auth: readAuth,
      responses: { 200: fhirResponse('CapabilityStatement') },
      handler: async ({ reply }) => {
        reply.header('etag', capability.etag);
        return capability.statement;
      },
    });

    const search = async (principal: Principal, type: string, parameters: QueryParameters): Promise<Bundle> => {
      const resourceType = knownType(type);
      const request = parseSearch(resourceType, parameters, { employerId: principal.employerId, encryptionKey: ctx.encryptionKey });
      const restricted = { ...request, conditions: [...request.conditions, ...compartmentCondition(await compartmentOf(ctx, principal))] };
      return searchBundle(base, request, await runSearch(ctx.db.slonik, principal.employerId, restricted));
    };

    route({
      method: 'GET',
      url: '/:resourceType',
      summary: 'Search resources of a type (a searchset Bundle, keyset-paged through its next and previous links)',
      auth: readAuth,
      params: typeParams,
      querystring: searchQuery,
      responses: { 200: fhirResponse('Bundle of type searchset') },
      handler: async ({ params, query, principal }) => search(principal, params.resourceType, query as QueryParameters),
    });

    route({
      method: 'POST',
      url: '/:resourceType/_search',
      summary: 'Search with the parameters in a form body (and the query string)',
      auth: readAuth,
      params: typeParams,
      querystring: searchQuery,
      body: z.record(z.string().max(100), searchValue).optional(),
      responses: { 200: fhirResponse('Bundle of type searchset') },
      handler: async ({ params, query, body, principal }) => {
        const merged: QueryParameters = { ...(query as QueryParameters) };
        for (const [name, value] of Object.entries(body ?? {})) merged[name] = [...[merged[name] ?? []].flat(), ...[value].flat()];
        return search(principal, params.resourceType, merged);
      },
    });

    route({
      method: 'GET',
      url: '/:resourceType/:id',
      summary: 'Read a resource (410 once its patient has been erased)',
      auth: readAuth,
      params: resourceParams,
      responses: { 200: fhirResponse('The resource') },
      handler: async ({ params, principal, reply }) => {
        const resourceType = knownType(params.resourceType);
        const found = await findVisibleResource(principal, resourceType, params.id);
        if (found.erased || !found.resource) throw gone();
        return sendResource(reply, found.resource);
      },
    });

    route({
      method: 'GET',
      url: '/:resourceType/:id/_history/:versionId',
      summary: 'Read one version of a resource, from its event',
      auth: readAuth,
      params: versionParams,
      responses: { 200: fhirResponse('The resource at that version') },
      handler: async ({ params, principal, reply }) => {
        const resourceType = knownType(params.resourceType);
        const { employerId } = principal;
        const found = await findVisibleResource(principal, resourceType, params.id);
        if (found.erased || !found.patientId) throw gone();
        const stream = resourceType === 'Patient' ? patientStream(employerId, params.id) : resourceStream(employerId, resourceType, params.id);
        const version = Number(params.versionId);
        const event = (await ctx.eventStore.readStream(stream, { fromRevision: BigInt(version - 1) }))[0];
        if (!event || event.streamRevision !== BigInt(version - 1) || !VERSIONED_EVENTS.has(event.type)) {
          throw fhirError(404, `${resourceType}/${params.id} has no version ${version}.`);
        }
        try {
          const key = await dataKey(ctx.db.slonik, ctx.encryptionKey, employerId, found.patientId);
          const content = openPersonal<FhirJson>(String(event.data.sealed), key, sealContext(employerId, resourceType, params.id));
          return sendResource(reply, withMeta(resourceType, params.id, version, event.metadata.occurredAt, content));
        } catch (error) {
          if (error instanceof PersonalDataErasedError) throw gone();
          throw error;
        }
      },
    });

    route({
      method: 'POST',
      url: '/:resourceType',
      summary: 'Create a resource (the id is the server\'s); If-None-Exist makes it conditional',
      description: 'If-None-Exist: a search query (e.g. `identifier=sys|123`): no match creates, one match answers 200 with it, several 412; since it answers with the match, it needs fhir:read too (403 otherwise). ' +
        'A Patient carries at most one e-mail, unique within the employer and outside the domains other employers have verified (409 duplicate, the same diagnostics for both). Clinical resources reference a Patient of the employer as subject. ' +
        'Prefer: return=minimal answers without a body.',
      auth: writeAuth,
      params: typeParams,
      body: resourceBody,
      idempotent: true,
      responses: { 201: fhirResponse('Created'), 200: fhirResponse('The one existing match of If-None-Exist') },
      handler: async ({ params, body, principal, request, reply }) => {
        const resourceType = knownType(params.resourceType);
        const resource = acceptedResource(resourceType, body);
        const condition = headerOf(request, 'if-none-exist');
        // The match is answered: without fhir:read, a key with fhir:write would read any resource by searching.
        if (condition !== undefined && !principal.scopes.includes('fhir:read')) throw fhirError(403, 'If-None-Exist answers with the matching resource: it needs fhir:read as well as fhir:write.');
        if (condition !== undefined) {
          const matches = await runSearch(ctx.db.slonik, principal.employerId, {
            ...parseSearch(resourceType, Object.fromEntries(new URLSearchParams(condition.replace(/^.*\?/, '')).entries()), { employerId: principal.employerId, encryptionKey: ctx.encryptionKey }),
            count: 2,
            cursor: null,
          });
          if (matches.total > 1) throw fhirError(412, `If-None-Exist matched ${matches.total} resources; it must match at most one.`);
          if (matches.total === 1) return respondWritten(request, reply, 200, matches.resources[0]!);
        }
        const written = await createFhirResource(ctx, commandContextOf(principal, request.id), { resourceType, resource });
        return respondWritten(request, reply, 201, representation(resourceType, written, resource));
      },
    });

    route({
      method: 'PUT',
      url: '/:resourceType/:id',
      summary: 'Update a resource; If-Match: W/"<versionId>" makes it conditional on the current version (412 when stale)',
      auth: writeAuth,
      params: resourceParams,
      body: resourceBody,
      responses: { 200: fhirResponse('Updated') },
      handler: async ({ params, body, principal, request, reply }) => {
        const resourceType = knownType(params.resourceType);
        const resource = acceptedResource(resourceType, body);
        const ifMatch = headerOf(request, 'if-match');
        const match = ifMatch === undefined ? null : /^(?:W\/)?"(\d{1,9})"$/.exec(ifMatch.trim());
        if (ifMatch !== undefined && !match) throw fhirError(400, 'If-Match must be W/"<versionId>".');
        const written = await updateFhirResource(ctx, commandContextOf(principal, request.id), {
          resourceType,
          id: params.id,
          resource,
          ...(match ? { expectedVersion: Number(match[1]) } : {}),
        });
        return respondWritten(request, reply, 200, representation(resourceType, written, resource));
      },
    });

    /** A resource of the caller's employer and compartment; 404 for any other, as for one that does not exist. */
    async function findVisibleResource(principal: Principal, resourceType: FhirResourceType, id: string) {
      const found = await findResource(ctx.db.slonik, principal.employerId, resourceType, id);
      const compartment = found ? await compartmentOf(ctx, principal) : undefined;
      if (!found || (compartment !== undefined && found.patientId !== compartment)) throw fhirError(404, `${resourceType}/${id} was not found.`);
      return found;
    }

    function representation(resourceType: FhirResourceType, written: WrittenVersion, resource: FhirJson): FhirJson {
      return withMeta(resourceType, written.id, written.versionId, written.lastUpdated, contentOf(resource));
    }

    /** Location, ETag and Last-Modified; the body unless the client prefers return=minimal. */
    function respondWritten(request: FastifyRequest, reply: FastifyReply, status: number, resource: FhirJson) {
      reply.status(status).header('location', `${base}/${resource.resourceType}/${resource.id}/_history/${resource.meta.versionId}`);
      sendResource(reply, resource);
      if (/return=minimal/.test(headerOf(request, 'prefer') ?? '')) return reply.send();
      return resource;
    }
  };
}

function knownType(type: string): FhirResourceType {
  if (!isFhirResourceType(type)) throw fhirError(400, `Unknown resource type ${type}. Supported: ${FHIR_RESOURCE_TYPES.join(', ')}.`);
  return type;
}

/** A create or update body: its type the path's, valid R4 (the validator's issues otherwise). */
function acceptedResource(resourceType: FhirResourceType, body: Record<string, unknown>): FhirJson {
  if (body.resourceType !== resourceType) throw fhirError(400, `The body must be a ${resourceType} (resourceType was ${String(body.resourceType)}).`);
  assertValidResource(body);
  return body;
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function sendResource(reply: FastifyReply, resource: FhirJson): FhirJson {
  reply.header('etag', `W/"${resource.meta.versionId}"`).header('last-modified', new Date(resource.meta.lastUpdated).toUTCString());
  return resource;
}

function searchBundle(base: string, request: SearchRequest, result: Awaited<ReturnType<typeof runSearch>>): Bundle {
  const link = (relation: string, cursor: string | null) => {
    const query = new URLSearchParams(request.filters);
    query.set('_count', String(request.count));
    if (request.descending) query.set('_sort', '-_lastUpdated');
    if (cursor) query.set('_cursor', cursor);
    return { relation, url: `${base}/${request.resourceType}?${query}` };
  };
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    total: result.total,
    link: [
      link('self', request.cursor ? encodeSearchCursor(request.cursor) : null),
      ...(result.next ? [link('next', encodeSearchCursor(result.next))] : []),
      ...(result.previous ? [link('previous', encodeSearchCursor(result.previous))] : []),
    ],
    // FHIR JSON has no empty arrays: a page without entries (_count=0, no match) leaves `entry` out.
    ...(result.resources.length === 0 ? {} : {
      entry: result.resources.map((resource) => ({ fullUrl: `${base}/${resource.resourceType}/${resource.id}`, resource: resource as never, search: { mode: 'match' as const } })),
    }),
  };
}

