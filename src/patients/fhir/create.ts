// Create (POST /api/fhir/:resourceType): the id is the server's; If-None-Exist makes it conditional.
import type { AppContext } from '../../app-context.ts';
import { commandContextOf, holdsScopeFor, type Principal } from '../../auth/principal.ts';
import { parseSearch, runSearch } from '../../../projections/fhir-resources/search.ts';
import { createFhirResource } from '../commands.ts';
import type { FhirJson, FhirResourceType } from '../events.ts';
import { acceptedResource, fhirResourceSchema, fhirResponse, headerOf, knownType, representation, resourceBody, respondWritten, typeParams, writeAuth, type FhirApi, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';

/**
 * The one resource a conditional create's search (If-None-Exist, a transaction entry's ifNoneExist)
 * matches, or null for none; 412 for several. The match is answered: without fhir:read for the type,
 * a key or SMART token with fhir:write would read any resource by searching.
 */
export async function existingMatch(ctx: AppContext, principal: Principal, resourceType: FhirResourceType, condition: string): Promise<FhirJson | null> {
  if (!holdsScopeFor(principal, 'fhir:read', resourceType)) throw fhirError('forbidden', `If-None-Exist answers with the matching resource: it needs fhir:read (for ${resourceType}) as well as fhir:write.`);
  const matches = await runSearch(ctx.db.slonik, principal.employerId, {
    ...parseSearch(resourceType, Object.fromEntries(new URLSearchParams(condition.replace(/^.*\?/, '')).entries()), { employerId: principal.employerId, encryptionKey: ctx.encryptionKey }),
    count: 2,
    cursor: null,
  });
  if (matches.total > 1) throw fhirError('precondition_failed', `If-None-Exist matched ${matches.total} resources; it must match at most one.`);
  return matches.resources[0] ?? null;
}

function createRoutes({ ctx, route, base }: FhirApi) {
  route({
    method: 'POST',
    url: '/:resourceType',
    summary: 'Create a resource (the id is the server\'s); If-None-Exist makes it conditional',
    description: 'If-None-Exist: a search query (e.g. `identifier=sys|123`): no match creates, one match answers 200 with it, several 412; since it answers with the match, it needs fhir:read too (403 otherwise). ' +
      'A Patient carries at most one e-mail, unique within the employer and outside the domains other employers have verified (409 duplicate, the same diagnostics for both). Clinical resources reference a Patient of the employer as subject. ' +
      'Prefer: return=minimal answers without a body.',
    auth: writeAuth,
    params: typeParams,
    body: resourceBody,
    documentedBody: fhirResourceSchema,
    idempotent: true,
    responses: {
      201: fhirResponse('Created'),
      200: fhirResponse('The one existing match of If-None-Exist'),
      409: { description: 'duplicate: a Patient\'s e-mail is taken' },
      412: { description: 'If-None-Exist matched more than one resource' },
    },
    handler: async ({ params, body, principal, request, reply }) => {
      const resourceType = knownType(params.resourceType);
      const resource = acceptedResource(resourceType, body);
      const condition = headerOf(request, 'if-none-exist');
      const match = condition === undefined ? null : await existingMatch(ctx, principal, resourceType, condition);
      if (match) return respondWritten(base, request, reply, 200, match);
      const written = await createFhirResource(ctx, commandContextOf(principal, request.id), { resourceType, resource });
      return respondWritten(base, request, reply, 201, representation(resourceType, written, resource));
    },
  });
}

export const createInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'create' }], conditionalCreate: true }) },
  routes: createRoutes,
};
