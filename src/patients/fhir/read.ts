// Read (GET /api/fhir/:resourceType/:id): the current version from the read model; 410 once it has
// been deleted or its patient erased. If-None-Match with its current ETag is 304 (conditional read);
// _elements and _summary return a subset (subset.ts).
import { z } from 'zod';
import { fhirResponse, findVisibleResource, headerOf, knownType, readable, readAuth, resourceParams, sendResource, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';
import { requestedSubset, subset, subsetQuery } from './subset.ts';

const readQuery = z.object(subsetQuery);

export const readInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'read' }], conditionalRead: 'not-match' }) },
  routes: ({ ctx, route }) =>
    route({
      method: 'GET',
      url: '/:resourceType/:id',
      summary: 'Read a resource (410 once deleted or its patient erased)',
      description: 'If-None-Match with the current ETag (W/"<versionId>", compared weakly, or *) answers 304 without a body.',
      auth: readAuth,
      params: resourceParams,
      querystring: readQuery,
      responses: { 200: fhirResponse('The resource'), 304: { description: 'Not modified: the ETag of If-None-Match is current' } },
      handler: async ({ params, query, principal, request, reply }) => {
        const resourceType = knownType(params.resourceType);
        if (query._summary === 'count') throw fhirError('invalid', '_summary=count is for searches.');
        const keys = requestedSubset(resourceType, query);
        const resource = readable(await findVisibleResource(ctx, principal, resourceType, params.id), resourceType, params.id);
        // Weak comparison (RFC 9110 13.1.2): W/"2" and "2" name the same version.
        const version = `"${resource.meta.versionId}"`;
        const ifNoneMatch = headerOf(request, 'if-none-match');
        if (ifNoneMatch?.split(',').some((tag) => ['*', version].includes(tag.trim().replace(/^W\//, '')))) return reply.status(304).header('etag', `W/${version}`).send();
        return sendResource(reply, keys === null ? resource : subset(resource, keys));
      },
    }),
};
