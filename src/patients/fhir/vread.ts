// Vread (GET /api/fhir/:resourceType/:id/_history/:versionId): one version of a resource, opened from
// the event that wrote it (the read model keeps only the current one).
import { z } from 'zod';
import { dataKey, openPersonal, PersonalDataErasedError } from '../../crypto/personal-data.ts';
import { withMeta } from '../../../projections/fhir-resources/queries.ts';
import { patientStream, resourceStream } from '../commands.ts';
import { sealContext, type FhirJson } from '../events.ts';
import { gone } from '../patient.ts';
import { fhirResponse, findVisibleResource, knownType, readAuth, resourceParams, sendResource, type FhirApi, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';

const VERSIONED_EVENTS = new Set(['PatientRegistered', 'PatientUpdated', 'ClinicalResourceCreated', 'ClinicalResourceUpdated']);
const versionParams = resourceParams.extend({ versionId: z.string().max(9).regex(/^[1-9]\d{0,8}$/, 'a version number') });

function vreadRoutes({ ctx, route }: FhirApi) {
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
      const found = await findVisibleResource(ctx, principal, resourceType, params.id);
      if (found.erased || !found.patientId) throw gone();
      const stream = resourceType === 'Patient' ? patientStream(employerId, params.id) : resourceStream(employerId, resourceType, params.id);
      const version = Number(params.versionId);
      const event = (await ctx.eventStore.readStream(stream, { fromRevision: BigInt(version - 1) }))[0];
      if (!event || event.streamRevision !== BigInt(version - 1) || !VERSIONED_EVENTS.has(event.type)) {
        throw fhirError('not_found', `${resourceType}/${params.id} has no version ${version}.`);
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
}

export const vreadInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'vread' }], versioning: 'versioned', readHistory: true }) },
  routes: vreadRoutes,
};
