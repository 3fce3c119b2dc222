// SCIM Groups (RFC 7644 section 3): the employer's groups and their members.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { ID_MAX } from '../../http/limits.ts';
import type { ListQuery } from '../../../projections/scim-list-page.ts';
import { findScimGroup, groupMembers, listScimGroups, type ScimGroupRow } from '../../../projections/scim-groups/queries.ts';
import { parseScimGroup, scimGroupSchema, selectAttributes } from '../attributes.ts';
import { createScimGroup, deleteScimGroup, updateScimGroup, type ScimCaller } from '../commands.ts';
import { GROUP_MEMBERS_RULE, scimListResponse } from '../discovery.ts';
import { applyGroupPatch, scimPatchRequestSchema } from '../patch.ts';
import { etagOf, GROUP_FILTER_ATTRIBUTES, scimGroupDoc, scimGroupResource } from '../resources.ts';
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

const groupParams = z.object({ groupId: z.string().min(1).max(ID_MAX) });

const wantsMembers = (selection: AttributeSelection) => 'members' in selectAttributes({ members: [] }, selection);

/** Groups as SCIM resources, their members read only when the selection keeps them. */
async function scimGroupResources(ctx: AppContext, baseUrl: string, employerId: string, rows: ScimGroupRow[], selection: AttributeSelection) {
  const members = wantsMembers(selection) ? await groupMembers(ctx.db.slonik, employerId, rows.map((row) => row.id)) : null;
  return rows.map((row) => selectAttributes(scimGroupResource(row, members?.get(row.id) ?? null, baseUrl), selection));
}

/** One page of groups as SCIM resources (GET /Groups, POST /Groups/.search, POST /.search). */
export async function scimGroupPage(ctx: AppContext, baseUrl: string, employerId: string, query: ListQuery, selection: AttributeSelection) {
  const page = await listScimGroups(ctx.db.slonik, employerId, query);
  return { ...page, resources: await scimGroupResources(ctx, baseUrl, employerId, page.rows, selection) };
}

export function groupRoutes({ ctx, writer, baseUrl, route }: ScimRouting): void {
  const groupResources = (caller: ScimCaller, rows: ScimGroupRow[], selection: AttributeSelection) => scimGroupResources(ctx, baseUrl, caller.employerId, rows, selection);
  const groupResponse = async (reply: FastifyReply, status: number, request: FastifyRequest, groupId: string, selection: AttributeSelection) => {
    const caller = callerOf(request);
    const row = await findScimGroup(ctx.db.slonik, caller.employerId, groupId);
    if (!row) throw notFound('Group', groupId);
    if (isNotModified(request, row.version)) return reply.status(304).header('etag', etagOf(row.version)).send();
    reply.header('etag', etagOf(row.version));
    if (status === 201) reply.header('location', `${baseUrl}/Groups/${row.id}`);
    const [resource] = await groupResources(caller, [row], selection);
    return send(reply, status, resource);
  };
  const groupList = async (reply: FastifyReply, request: FastifyRequest, list: ListRequest) => {
    const page = await scimGroupPage(ctx, baseUrl, callerOf(request).employerId, readModelQuery(list, GROUP_FILTER_ATTRIBUTES), list);
    return send(reply, 200, scimListResponse(page.resources, page));
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
    aliases: ['/Groups/'],
    summary: 'List groups of the employer (Entra ID asks with excludedAttributes=members)',
    querystring: listQuery,
    handler: async ({ query, request, reply }) => groupList(reply, request, query),
  });
  route({
    method: 'POST',
    url: '/Groups/.search',
    summary: 'List groups as GET /Groups does, the query in a SearchRequest body (RFC 7644 section 3.4.3)',
    body: searchRequestSchema,
    handler: async ({ body, request, reply }) => groupList(reply, request, body),
  });
  route({
    method: 'POST',
    url: '/Groups',
    summary: 'Create a group; every member must be a user of the employer',
    description: GROUP_MEMBERS_RULE,
    documentedBody: scimGroupSchema,
    querystring: selectionQuery,
    responses: { 201: { description: 'The created group', contentType: SCIM_CONTENT_TYPE } },
    handler: async ({ query, request, reply }) => {
      const caller = callerOf(request);
      const groupId = await createScimGroup(ctx, writer, caller, parseScimGroup(request.body));
      return groupResponse(reply, 201, request, groupId, query);
    },
  });
  route({
    method: 'GET',
    url: '/Groups/:groupId',
    summary: 'One group with its members',
    params: groupParams,
    querystring: selectionQuery,
    handler: async ({ params, query, request, reply }) => groupResponse(reply, 200, request, params.groupId, query),
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
      return groupResponse(reply, 200, request, params.groupId, query);
    },
  });
  route({
    method: 'PATCH',
    url: '/Groups/:groupId',
    summary: 'Patch a group: rename, externalId, add/remove/replace members (Okta and Entra ID dialects)',
    description: GROUP_MEMBERS_RULE,
    documentedBody: scimPatchRequestSchema,
    params: groupParams,
    querystring: selectionQuery,
    handler: async ({ params, query, request, reply }) => {
      const before = await currentGroup(request, params.groupId);
      const { doc } = applyGroupPatch(before, request.body);
      await updateScimGroup(ctx, writer, callerOf(request), params.groupId, before, doc, ifMatchOf(request));
      return groupResponse(reply, 200, request, params.groupId, query);
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
}
