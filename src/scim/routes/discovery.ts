// SCIM discovery (RFC 7644 section 4): ServiceProviderConfig, ResourceTypes and Schemas.
import { z } from 'zod';
import { URL_MAX } from '../../http/limits.ts';
import { buildResourceTypes, buildSchemas, buildServiceProviderConfig, scimListResponse } from '../discovery.ts';
import { ScimError } from '../errors.ts';
import { send, type ScimRouting } from './scim-route.ts';

/** ResourceTypes and Schemas are named by id or schema URN. */
const discoveryParams = z.object({ id: z.string().max(URL_MAX) });

export function discoveryRoutes({ route, baseUrl }: ScimRouting): void {
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
}

function findDocument<T extends { id: string }>(documents: T[], id: string, what: string): T {
  const document = documents.find((candidate) => candidate.id.toLowerCase() === id.toLowerCase());
  if (!document) throw new ScimError(404, null, `No ${what} ${id}.`);
  return document;
}
