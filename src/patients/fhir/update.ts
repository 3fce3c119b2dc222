// Update (PUT /api/fhir/:resourceType/:id); If-Match: W/"<versionId>" makes it conditional on the
// current version (412 when stale).
import { commandContextOf } from '../../auth/principal.ts';
import { updateFhirResource } from '../commands.ts';
import { acceptedResource, fhirResourceSchema, fhirResponse, headerOf, ifMatchVersion, knownType, representation, resourceBody, resourceParams, respondWritten, writeAuth, type FhirApi, type FhirInteraction } from './interaction.ts';

function updateRoutes({ ctx, route, base }: FhirApi) {
  route({
    method: 'PUT',
    url: '/:resourceType/:id',
    summary: 'Update a resource; If-Match: W/"<versionId>" makes it conditional on the current version (412 when stale)',
    auth: writeAuth,
    params: resourceParams,
    body: resourceBody,
    documentedBody: fhirResourceSchema,
    responses: { 200: fhirResponse('Updated'), 412: { description: 'If-Match names a version that is no longer the current one' } },
    handler: async ({ params, body, principal, request, reply }) => {
      const resourceType = knownType(params.resourceType);
      const resource = acceptedResource(resourceType, body);
      const expectedVersion = ifMatchVersion(headerOf(request, 'if-match'));
      const written = await updateFhirResource(ctx, commandContextOf(principal, request.id), {
        resourceType,
        id: params.id,
        resource,
        ...(expectedVersion === undefined ? {} : { expectedVersion }),
      });
      return respondWritten(base, request, reply, 200, representation(resourceType, written, resource));
    },
  });
}

export const updateInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'update' }], updateCreate: false, conditionalUpdate: false }) },
  routes: updateRoutes,
};
