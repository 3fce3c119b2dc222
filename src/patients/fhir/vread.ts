// Vread (GET /api/fhir/:resourceType/:id/_history/:versionId): one version of a resource, opened from
// the event that wrote it (the read model keeps only the current one); the version a delete wrote is 410.
import { z } from 'zod';
import { dataKey, PersonalDataErasedError } from '../../crypto/personal-data.ts';
import { gone } from '../patient.ts';
import { fhirResponse, findVisibleResource, knownType, readAuth, resourceParams, sendResource, type FhirApi, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';
import { streamOf, versionOf } from './versions.ts';

const versionParams = resourceParams.extend({ versionId: z.string().max(9).regex(/^[1-9]\d{0,8}$/, 'a version number') });

function vreadRoutes({ ctx, route }: FhirApi) {
  route({
    method: 'GET',
    url: '/:resourceType/:id/_history/:versionId',
    summary: 'Read one version of a resource, from its event (410 for the version a delete wrote)',
    auth: readAuth,
    params: versionParams,
    responses: { 200: fhirResponse('The resource at that version') },
    handler: async ({ params, principal, reply }) => {
      const resourceType = knownType(params.resourceType);
      const { employerId } = principal;
      const found = await findVisibleResource(ctx, principal, resourceType, params.id);
      if (found.erased || !found.patientId) throw gone();
      const version = Number(params.versionId);
      const event = (await ctx.eventStore.readStream(streamOf(employerId, resourceType, params.id), { fromRevision: BigInt(version - 1) }))[0];
      try {
        const read = event?.streamRevision === BigInt(version - 1) ? versionOf(event, await dataKey(ctx.db.slonik, ctx.encryptionKey, employerId, found.patientId), employerId, resourceType, params.id) : null;
        if (!read) throw fhirError('not_found', `${resourceType}/${params.id} has no version ${version}.`);
        if (read.deleted) throw fhirError('gone', `${resourceType}/${params.id} was deleted in version ${version}.`);
        return sendResource(reply, read.resource);
      } catch (error) {
        if (error instanceof PersonalDataErasedError) throw gone();
        throw error;
      }
    },
  });
}

export const vreadInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'vread' }], versioning: 'versioned', readHistory: true }) },
  routes: vreadRoutes,
};
