// Delete (DELETE /api/fhir/:resourceType/:id). A clinical resource's deletion is a version of its own
// (ClinicalResourceDeleted): later reads answer 410, searches no longer find it, earlier versions stay
// readable (vread, history). 204 with the deletion's ETag; deleting a deleted resource writes nothing
// and answers the same (R4's idempotent delete); an id the caller cannot see is 404, as for a read.
// A Patient holds personal data, which this service removes only by erasure (crypto-shredding): an
// administrator's browser session (who alone may erase, SPEC 4.2) erases it here; an API key gets 403
// naming the erasure route, as it does on any session-only route.
import { commandContextOf, type Principal } from '../../auth/principal.ts';
import type { AppContext } from '../../app-context.ts';
import { deleteFhirResource, erasePatient } from '../commands.ts';
import type { FhirResourceType } from '../events.ts';
import { gone } from '../patient.ts';
import { findVisibleResource, headerOf, ifMatchVersion, knownType, resourceParams, writeAuth, type FhirApi, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';

export const ERASURE_ROUTE = 'DELETE /api/employer/patients/{id}/personal-data';

function deleteRoutes({ ctx, route }: FhirApi) {
  route({
    method: 'DELETE',
    url: '/:resourceType/:id',
    summary: 'Delete a resource (204; later reads 410); a Patient is erased, by an administrator\'s session only',
    description: 'A clinical resource: its deletion is a new version (history shows it, earlier versions stay readable by vread); deleting it again answers 204 and writes nothing; ' +
      'If-Match: W/"<versionId>" makes it conditional (412 when stale). ' +
      `A Patient: an administrator's browser session erases its personal data (as ${ERASURE_ROUTE}: its resources all answer 410 from then on); an API key is refused 403.`,
    auth: writeAuth,
    params: resourceParams,
    responses: {
      204: { description: 'Deleted (ETag: the deletion\'s version)' },
      410: { description: 'gone: the resource\'s patient has been erased' },
      412: { description: 'If-Match names a version that is no longer the current one' },
    },
    handler: async ({ params, principal, request, reply }) => {
      const resourceType = knownType(params.resourceType);
      const written = await deleteAs(ctx, principal, request.id, resourceType, params.id, ifMatchVersion(headerOf(request, 'if-match')));
      if (written !== null) reply.header('etag', `W/"${written}"`);
      return reply.status(204).send();
    },
  });
}

export const deleteInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'delete' }], conditionalDelete: 'not-supported' }) },
  routes: deleteRoutes,
};

/** Deletes (or erases) the resource for the caller; the deletion's version, or null for an erasure. */
export async function deleteAs(ctx: AppContext, principal: Principal, requestId: string, resourceType: FhirResourceType, id: string, expectedVersion: number | undefined): Promise<number | null> {
  const found = await findVisibleResource(ctx, principal, resourceType, id);
  const context = commandContextOf(principal, requestId);
  if (resourceType === 'Patient') {
    if (principal.kind !== 'session' || principal.role !== 'EMPLOYER_ADMIN') {
      throw fhirError('forbidden', `A Patient is removed by erasing its personal data, which needs an administrator's browser session: ${ERASURE_ROUTE.replace('{id}', id)}.`);
    }
    await erasePatient(ctx, context, { patientId: id });
    return null;
  }
  if (found.erased) throw gone();
  return (await deleteFhirResource(ctx, context, { resourceType, id, ...(expectedVersion === undefined ? {} : { expectedVersion }) })).versionId;
}
