// Update (PUT /api/fhir/:resourceType/:id); If-Match: W/"<versionId>" makes it conditional on the
// current version (412 when stale).
import { commandContextOf } from '../../auth/principal.ts';
import { updateFhirResource } from '../commands.ts';
import { acceptedResource, fhirResponse, headerOf, ifMatchVersion, knownType, representation, resourceBody, resourceParams, respondWritten, writeAuth, type FhirApi } from './interaction.ts';

export function updateInteraction({ ctx, route, base }: FhirApi) {
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
