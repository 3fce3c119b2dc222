// SCIM 2.0 under /api/scim/v2 (RFC 7643/7644, SPEC 4.6): discovery documents, Users and Groups.
// Every request passes the rate limit and then the employer's bearer token (an onRequest hook of this
// plugin, before the body is even read), and every answer is application/scim+json, errors included.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { DomainError } from '../event-store/decider.ts';
import { assertAllowed } from '../http/token-buckets.ts';
import { kindOfStatus, type ErrorShape, type ServiceError } from '../http/errors.ts';
import { ID_MAX, SCIM_QUERY_MAX, URL_MAX } from '../http/limits.ts';
import { defineRoute, type RouteDefinition } from '../http/route.ts';
import { acceptJson, type RoutePlugin } from '../http/server.ts';
import { attributeListSchema, parseScimGroup, parseScimUser, scimGroupSchema, scimUserSchema, selectAttributes } from './attributes.ts';
import {
  createScimGroup,
  deleteScimGroup,
  deleteScimUser,
  provisionScimUser,
  updateScimGroup,
  updateScimUser,
  type IfMatch,
  type ScimCaller,
} from './commands.ts';
import { buildResourceTypes, buildSchemas, buildServiceProviderConfig, scimListResponse, SCIM_MAX_RESULTS } from './discovery.ts';
import { ScimError, toScimErrorBody, type ScimErrorType } from './errors.ts';
import { applyGroupPatch, applyUserPatch, scimPatchRequestSchema } from './patch.ts';
import {
  findScimGroup,
  findScimUser,
  groupMembers,
  listScimGroups,
  listScimUsers,
  type ListQuery,
  type ScimGroupRow,
  type ScimUserRow,
} from '../../projections/scim-groups/queries.ts';
import { scimFilterToSql, type ScimAttributeMap } from './filter.ts';
import type { ScimRateLimiter } from './rate-limit.ts';
import { createScimWriter } from './read-your-writes.ts';
import {
  etagOf,
  GROUP_FILTER_ATTRIBUTES,
  scimGroupDoc,
  scimGroupResource,
  scimUserResource,
  USER_FILTER_ATTRIBUTES,
} from './resources.ts';

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

const scimErrorShape: ErrorShape = (error: ServiceError) => {
  const scimType = (error.details.scimType as ScimErrorType | undefined) ?? SCIM_TYPES_BY_CODE[error.code] ?? null;
  return { contentType: SCIM_CONTENT_TYPE, body: toScimErrorBody(new ScimError(error.status, scimType, error.message)) };
};

/** A ScimError from the SCIM modules as the DomainError the service's error handler knows. */
function asServiceError(error: unknown): unknown {
  if (!(error instanceof ScimError)) return error;
  return new DomainError(kindOfStatus(error.status), error.scimType ? `SCIM_${error.scimType}` : 'SCIM_ERROR', error.message, error.scimType ? { scimType: error.scimType } : {});
}

const listQuery = z.object({
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
function readModelQuery(query: z.infer<typeof listQuery>, attributes: ScimAttributeMap): ListQuery {
  return {
    filter: query.filter === undefined ? null : scimFilterToSql(query.filter, attributes),
    startIndex: query.startIndex,
    count: Math.min(query.count, SCIM_MAX_RESULTS),
  };
}
const selectionQuery = listQuery.pick({ attributes: true, excludedAttributes: true });
const userParams = z.object({ userId: z.string().min(1).max(ID_MAX) });
const groupParams = z.object({ groupId: z.string().min(1).max(ID_MAX) });
/** ResourceTypes and Schemas are named by id or schema URN. */
const discoveryParams = z.object({ id: z.string().max(URL_MAX) });

export function scimRoutes(limiter: ScimRateLimiter): RoutePlugin {
  return async (fastify, { ctx }) => {
    // Okta's test suite posts plain JSON; RFC 7644 clients send application/scim+json.
    acceptJson(fastify, SCIM_CONTENT_TYPE);
    fastify.errorShapesByPrefix.set(SCIM_PATH, scimErrorShape);
    fastify.addHook('onRequest', async (request, reply) => {
      request.scimCaller = await authenticateScim(ctx, limiter, request, reply);
    });

    const baseUrl = `${ctx.config.PUBLIC_BASE_URL}${SCIM_PATH}`;
    const writer = createScimWriter(ctx);
    const route = <Body extends z.ZodType | undefined, Params extends z.ZodType | undefined, Query extends z.ZodType | undefined>(
      definition: Omit<RouteDefinition<Body, Params, Query, { public: true }>, 'auth' | 'tags' | 'errorShape' | 'responses'> & { responses?: RouteDefinition<Body, Params, Query, { public: true }>['responses'] },
    ) =>
      defineRoute(fastify, ctx, {
        ...definition,
        url: `${SCIM_PATH}${definition.url}`,
        tags: ['SCIM'],
        auth: { public: true },
        errorShape: scimErrorShape,
        responses: definition.responses ?? { 200: { description: 'SCIM resource', contentType: SCIM_CONTENT_TYPE } },
        handler: async (input) => {
          try {
            return await definition.handler(input);
          } catch (error) {
            throw asServiceError(error);
          }
        },
      });
    const callerOf = (request: FastifyRequest): ScimCaller => request.scimCaller!;

    route({
      method: 'GET',
      url: '/ServiceProviderConfig',
      summary: 'What this SCIM service supports (patch, filter with maxResults, etag; no bulk, sort or password change)',
      handler: async ({ reply }) => send(reply, 200, buildServiceProviderConfig(baseUrl)),
    });
    route({
      method: 'GET',
      url: '/ResourceTypes',
      summary: 'The User and Group resource types',
      handler: async ({ reply }) => send(reply, 200, scimListResponse(buildResourceTypes(baseUrl))),
    });
    route({
      method: 'GET',
      url: '/ResourceTypes/:id',
      summary: 'One resource type',
      params: discoveryParams,
      handler: async ({ params, reply }) => send(reply, 200, findDocument(buildResourceTypes(baseUrl), params.id, 'resource type')),
    });
    route({
      method: 'GET',
      url: '/Schemas',
      summary: 'The User and Group schemas (read by Entra ID when its provisioning settings are saved)',
      handler: async ({ reply }) => send(reply, 200, scimListResponse(buildSchemas(baseUrl))),
    });
    route({
      method: 'GET',
      url: '/Schemas/:id',
      summary: 'One schema, by its URN',
      params: discoveryParams,
      handler: async ({ params, reply }) => send(reply, 200, findDocument(buildSchemas(baseUrl), params.id, 'schema')),
    });

    // Users
    const sendUser = (reply: FastifyReply, status: number, row: ScimUserRow, selection: z.infer<typeof selectionQuery>) => {
      reply.header('etag', etagOf(row.version));
      if (status === 201) reply.header('location', `${baseUrl}/Users/${row.id}`);
      return send(reply, status, selectAttributes(scimUserResource(row, baseUrl), selection));
    };
    const userResponse = async (reply: FastifyReply, status: number, caller: ScimCaller, userId: string, selection: z.infer<typeof selectionQuery>) => {
      const row = await findScimUser(ctx.db.slonik, caller.employerId, userId);
      if (!row) throw notFound('User', userId);
      return sendUser(reply, status, row, selection);
    };

    route({
      method: 'GET',
      url: '/Users',
      summary: 'List users of the employer, with filter, startIndex/count paging and attribute selection',
      querystring: listQuery,
      handler: async ({ query, request, reply }) => {
        const page = await listScimUsers(ctx.db.slonik, callerOf(request).employerId, readModelQuery(query, USER_FILTER_ATTRIBUTES));
        const resources = page.rows.map((row) => selectAttributes(scimUserResource(row, baseUrl), query));
        return send(reply, 200, scimListResponse(resources, page));
      },
    });
    route({
      method: 'POST',
      url: '/Users',
      summary: 'Provision a PATIENT user (e-mail unique across employers, userName unique in the employer)',
      description: '409 uniqueness with the same detail, naming no employer, whatever makes the e-mail unavailable: a user of this employer or of another holds it, ' +
        'or it is in a domain another employer has verified (/api/employer/email-domains).',
      documentedBody: scimUserSchema,
      querystring: selectionQuery,
      responses: { 201: { description: 'The created user', contentType: SCIM_CONTENT_TYPE } },
      handler: async ({ query, request, reply }) => {
        return sendUser(reply, 201, await provisionScimUser(ctx, writer, callerOf(request), parseScimUser(request.body)), query);
      },
    });
    route({
      method: 'GET',
      url: '/Users/:userId',
      summary: 'One user (deactivated users too; users deleted through SCIM are 404)',
      params: userParams,
      querystring: selectionQuery,
      handler: async ({ params, query, request, reply }) => userResponse(reply, 200, callerOf(request), params.userId, query),
    });
    route({
      method: 'PUT',
      url: '/Users/:userId',
      summary: "Replace a user (Okta); active false deactivates; an administrator's userName and sign-in e-mail never change through SCIM (400 mutability)",
      documentedBody: scimUserSchema,
      params: userParams,
      querystring: selectionQuery,
      handler: async ({ params, query, request, reply }) => {
        await updateScimUser(ctx, writer, callerOf(request), params.userId, ifMatchOf(request), () => parseScimUser(request.body));
        return userResponse(reply, 200, callerOf(request), params.userId, query);
      },
    });
    route({
      method: 'PATCH',
      url: '/Users/:userId',
      summary: "Patch a user in Okta's or Entra ID's dialect; active false deactivates; an administrator's userName and sign-in e-mail never change through SCIM (400 mutability)",
      documentedBody: scimPatchRequestSchema,
      params: userParams,
      querystring: selectionQuery,
      handler: async ({ params, query, request, reply }) => {
        await updateScimUser(ctx, writer, callerOf(request), params.userId, ifMatchOf(request), (doc) => applyUserPatch(doc, request.body));
        return userResponse(reply, 200, callerOf(request), params.userId, query);
      },
    });
    route({
      method: 'DELETE',
      url: '/Users/:userId',
      summary: 'Deactivate the user and hide it from SCIM (its e-mail and userName are free again); revokes its API keys and ends its sessions',
      params: userParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ params, request, reply }) => {
        await deleteScimUser(ctx, writer, callerOf(request), params.userId, ifMatchOf(request));
        return reply.status(204).send();
      },
    });

    // Groups
    const wantsMembers = (selection: z.infer<typeof selectionQuery>) => 'members' in selectAttributes({ members: [] }, selection);
    const groupResources = async (caller: ScimCaller, rows: ScimGroupRow[], selection: z.infer<typeof selectionQuery>) => {
      const members = wantsMembers(selection) ? await groupMembers(ctx.db.slonik, caller.employerId, rows.map((row) => row.id)) : null;
      return rows.map((row) => selectAttributes(scimGroupResource(row, members?.get(row.id) ?? null, baseUrl), selection));
    };
    const groupResponse = async (reply: FastifyReply, status: number, caller: ScimCaller, groupId: string, selection: z.infer<typeof selectionQuery>) => {
      const row = await findScimGroup(ctx.db.slonik, caller.employerId, groupId);
      if (!row) throw notFound('Group', groupId);
      reply.header('etag', etagOf(row.version));
      if (status === 201) reply.header('location', `${baseUrl}/Groups/${row.id}`);
      const [resource] = await groupResources(caller, [row], selection);
      return send(reply, status, resource);
    };
    const currentGroup = async (request: FastifyRequest, groupId: string) => {
      const caller = callerOf(request);
      const row = await findScimGroup(ctx.db.slonik, caller.employerId, groupId);
      if (!row) throw notFound('Group', groupId);
      const members = (await groupMembers(ctx.db.slonik, caller.employerId, [row.id])).get(row.id) ?? [];
      return scimGroupDoc(row, members);
    };

    route({
      method: 'GET',
      url: '/Groups',
      summary: 'List groups of the employer (Entra ID asks with excludedAttributes=members)',
      querystring: listQuery,
      handler: async ({ query, request, reply }) => {
        const caller = callerOf(request);
        const page = await listScimGroups(ctx.db.slonik, caller.employerId, readModelQuery(query, GROUP_FILTER_ATTRIBUTES));
        return send(reply, 200, scimListResponse(await groupResources(caller, page.rows, query), page));
      },
    });
    route({
      method: 'POST',
      url: '/Groups',
      summary: 'Create a group; every member must be a user of the employer',
      documentedBody: scimGroupSchema,
      querystring: selectionQuery,
      responses: { 201: { description: 'The created group', contentType: SCIM_CONTENT_TYPE } },
      handler: async ({ query, request, reply }) => {
        const caller = callerOf(request);
        const groupId = await createScimGroup(ctx, writer, caller, parseScimGroup(request.body));
        return groupResponse(reply, 201, caller, groupId, query);
      },
    });
    route({
      method: 'GET',
      url: '/Groups/:groupId',
      summary: 'One group with its members',
      params: groupParams,
      querystring: selectionQuery,
      handler: async ({ params, query, request, reply }) => groupResponse(reply, 200, callerOf(request), params.groupId, query),
    });
    route({
      method: 'PUT',
      url: '/Groups/:groupId',
      summary: 'Replace a group: name, externalId and the complete member list',
      documentedBody: scimGroupSchema,
      params: groupParams,
      querystring: selectionQuery,
      handler: async ({ params, query, request, reply }) => {
        const before = await currentGroup(request, params.groupId);
        await updateScimGroup(ctx, writer, callerOf(request), params.groupId, before, parseScimGroup(request.body), ifMatchOf(request));
        return groupResponse(reply, 200, callerOf(request), params.groupId, query);
      },
    });
    route({
      method: 'PATCH',
      url: '/Groups/:groupId',
      summary: 'Patch a group: rename, externalId, add/remove/replace members (Okta and Entra ID dialects)',
      documentedBody: scimPatchRequestSchema,
      params: groupParams,
      querystring: selectionQuery,
      handler: async ({ params, query, request, reply }) => {
        const before = await currentGroup(request, params.groupId);
        const { doc } = applyGroupPatch(before, request.body);
        await updateScimGroup(ctx, writer, callerOf(request), params.groupId, before, doc, ifMatchOf(request));
        return groupResponse(reply, 200, callerOf(request), params.groupId, query);
      },
    });
    route({
      method: 'DELETE',
      url: '/Groups/:groupId',
      summary: 'Delete the group and its memberships',
      params: groupParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ params, request, reply }) => {
        await currentGroup(request, params.groupId);
        await deleteScimGroup(writer, callerOf(request), params.groupId, ifMatchOf(request));
        return reply.status(204).send();
      },
    });

    // Anything else under the SCIM base answers in the SCIM envelope too (after authentication).
    fastify.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url: `${SCIM_PATH}/*`,
      config: { auth: { public: true }, errorShape: scimErrorShape },
      schema: { hide: true },
      handler: async (request) => {
        throw new DomainError('not_found', 'NOT_FOUND', `No SCIM endpoint ${request.method} ${request.url.split('?')[0]}.`);
      },
    });
  };
}

/** Rate limit first (no database work for a flood; src/scim/rate-limit.ts), then the bearer token of one employer. */
async function authenticateScim(ctx: AppContext, limiter: ScimRateLimiter, request: FastifyRequest, reply: FastifyReply): Promise<ScimCaller> {
  const token = bearerTokenOf(request);
  const current = token !== null && (await ctx.auth.scimTokens.isCurrent(token));
  assertAllowed(limiter.admit(request.ip, token, current), reply, 'Too many SCIM requests');
  const caller = token === null ? null : await ctx.auth.scimTokens.ownerOf(token);
  if (!caller) {
    reply.header('www-authenticate', 'Bearer realm="scim"');
    throw new DomainError(
      'unauthenticated',
      'INVALID_SCIM_TOKEN',
      token === null ? 'A SCIM bearer token is required: Authorization: Bearer <token>.' : 'The SCIM bearer token is invalid or no longer valid.',
    );
  }
  limiter.recordAuthenticated(request.ip, current);
  return caller;
}

function bearerTokenOf(request: FastifyRequest): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  return match?.[1] ?? null;
}

function send(reply: FastifyReply, status: number, body: unknown) {
  return reply.status(status).type(SCIM_CONTENT_TYPE).send(body);
}

/**
 * If-Match (RFC 7644 section 3.14) as a condition on the resource's stream revision, which its ETag
 * names: the write is appended at that revision or not at all (412).
 */
function ifMatchOf(request: FastifyRequest): IfMatch {
  const header = request.headers['if-match'];
  if (header === undefined || header.trim() === '*') return undefined;
  const revisions = header.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
  return (revision) => revisions.includes(etagOf(Number(revision)).slice(2));
}

function findDocument<T extends { id: string }>(documents: T[], id: string, what: string): T {
  const document = documents.find((candidate) => candidate.id.toLowerCase() === id.toLowerCase());
  if (!document) throw new ScimError(404, null, `No ${what} ${id}.`);
  return document;
}

function notFound(resourceType: 'User' | 'Group', id: string): ScimError {
  return new ScimError(404, null, `${resourceType} ${id} not found.`);
}
