// Read (GET /api/fhir/:resourceType/:id): the current version from the read model; 410 once it
// has been deleted or its patient erased.
import { fhirResponse, findVisibleResource, readable, knownType, readAuth, resourceParams, sendResource, type FhirApi } from './interaction.ts';

export function readInteraction({ ctx, route }: FhirApi) {
  route({
    method: 'GET',
    url: '/:resourceType/:id',
    summary: 'Read a resource (410 once deleted or its patient erased)',
    auth: readAuth,
    params: resourceParams,
    responses: { 200: fhirResponse('The resource') },
    handler: async ({ params, principal, reply }) => {
      const resourceType = knownType(params.resourceType);
      const found = await findVisibleResource(ctx, principal, resourceType, params.id);
      return sendResource(reply, readable(found, resourceType, params.id));
    },
  });
}
