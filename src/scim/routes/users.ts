// SCIM Users (RFC 7644 section 3): the employer's users, provisioned, replaced, patched and deleted.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { ID_MAX } from '../../http/limits.ts';
import type { ListQuery } from '../../../projections/scim-list-page.ts';
import { findScimUser, listScimUsers, type ScimUserRow } from '../../../projections/tenants/queries.ts';
import { parseScimUser, scimUserSchema, selectAttributes } from '../attributes.ts';
import { deleteScimUser, provisionScimUser, updateScimUser } from '../commands.ts';
import { scimListResponse } from '../discovery.ts';
import { applyUserPatch, scimPatchRequestSchema } from '../patch.ts';
import { etagOf, scimUserResource, USER_FILTER_ATTRIBUTES } from '../resources.ts';
import {
  callerOf,
  ifMatchOf,
  isNotModified,
  listQuery,
  notFound,
  readModelQuery,
  SCIM_CONTENT_TYPE,
  selectionQuery,
  searchRequestSchema,
  send,
  type AttributeSelection,
  type ListRequest,
  type ScimRouting,
} from './scim-route.ts';

const userParams = z.object({ userId: z.string().min(1).max(ID_MAX) });

/** One page of users as SCIM resources (GET /Users, POST /Users/.search, POST /.search). */
export async function scimUserPage(ctx: AppContext, baseUrl: string, employerId: string, query: ListQuery, selection: AttributeSelection) {
  const page = await listScimUsers(ctx.db.slonik, employerId, query);
  return { ...page, resources: page.rows.map((row) => selectAttributes(scimUserResource(row, baseUrl), selection)) };
}

export function userRoutes({ ctx, writer, baseUrl, route }: ScimRouting): void {
  const sendUser = (reply: FastifyReply, status: number, row: ScimUserRow, selection: AttributeSelection) => {
    reply.header('etag', etagOf(row.version));
    if (status === 201) reply.header('location', `${baseUrl}/Users/${row.id}`);
    return send(reply, status, selectAttributes(scimUserResource(row, baseUrl), selection));
  };
  const userResponse = async (reply: FastifyReply, status: number, request: FastifyRequest, userId: string, selection: AttributeSelection) => {
    const row = await findScimUser(ctx.db.slonik, callerOf(request).employerId, userId);
    if (!row) throw notFound('User', userId);
    if (isNotModified(request, row.version)) return reply.status(304).header('etag', etagOf(row.version)).send();
    return sendUser(reply, status, row, selection);
  };
  const userList = async (reply: FastifyReply, request: FastifyRequest, list: ListRequest) => {
    const page = await scimUserPage(ctx, baseUrl, callerOf(request).employerId, readModelQuery(list, USER_FILTER_ATTRIBUTES), list);
    return send(reply, 200, scimListResponse(page.resources, page));
  };

  route({
    method: 'GET',
    url: '/Users',
    aliases: ['/Users/'],
    summary: 'List users of the employer, with filter, startIndex/count paging and attribute selection',
    querystring: listQuery,
    handler: async ({ query, request, reply }) => userList(reply, request, query),
  });
  route({
    method: 'POST',
    url: '/Users/.search',
    summary: 'List users as GET /Users does, the query in a SearchRequest body (RFC 7644 section 3.4.3)',
    body: searchRequestSchema,
    handler: async ({ body, request, reply }) => userList(reply, request, body),
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
    handler: async ({ params, query, request, reply }) => userResponse(reply, 200, request, params.userId, query),
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
      return userResponse(reply, 200, request, params.userId, query);
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
      return userResponse(reply, 200, request, params.userId, query);
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
}
