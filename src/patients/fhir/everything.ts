// Patient/{id}/$everything (GET): the Patient and every resource of its compartment, as a searchset
// Bundle paged by its next link (projections/fhir-resources/everything.ts): _type limits the types,
// _since to resources changed after an instant, _count sizes the pages. A PATIENT session asks only for
// its own Patient (any other is 404, as for a read).
import type { Bundle } from '@medplum/fhirtypes';
import { z } from 'zod';
import { holdsScopeFor } from '../../auth/principal.ts';
import { instantMillis, INSTANT_RANGE_MESSAGE } from '../../http/instant.ts';
import { decodeEverythingCursor, encodeEverythingCursor, patientEverything } from '../../../projections/fhir-resources/everything.ts';
import { DEFAULT_COUNT, MAX_COUNT } from '../../../projections/fhir-resources/search.ts';
import { FHIR_RESOURCE_TYPES, isFhirResourceType } from '../events.ts';
import { gone } from '../patient.ts';
import { fhirResponse, findVisibleResource, readAuth, resourceParams, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';

export const EVERYTHING_DEFINITION = 'http://hl7.org/fhir/OperationDefinition/Patient-everything';

const everythingParams = resourceParams.pick({ id: true });
const everythingQuery = z.object({
  _type: z.string().max(500).optional().meta({ description: `Comma-separated resource types, of ${FHIR_RESOURCE_TYPES.join(', ')}; all by default.` }),
  _since: z.string().max(40).optional().meta({ description: 'Only resources last updated after this instant.' }),
  _count: z.string().max(10).optional().meta({ description: `Page size, default ${DEFAULT_COUNT}, at most ${MAX_COUNT} (larger values are capped).` }),
  _cursor: z.string().max(400).optional().meta({ description: 'Paging state; taken from a next link, never made up.' }),
});

export const everythingInteraction: FhirInteraction = {
  statement: { resource: (resourceType) => (resourceType === 'Patient' ? { operation: [{ name: 'everything', definition: EVERYTHING_DEFINITION }] } : {}) },
  routes: ({ ctx, route, base }) =>
    route({
      method: 'GET',
      url: '/Patient/:id/$everything',
      summary: 'Everything of one patient: the Patient and the resources of its compartment (a searchset Bundle, paged by its next link)',
      auth: readAuth,
      params: everythingParams,
      querystring: everythingQuery,
      responses: { 200: fhirResponse('Bundle of type searchset') },
      handler: async ({ params, query, principal }): Promise<Bundle> => {
        const types = query._type === undefined ? [...FHIR_RESOURCE_TYPES] : query._type.split(',').map((type) => type.trim()).filter(Boolean);
        const unknown = types.filter((type) => !isFhirResourceType(type));
        if (unknown.length > 0 || types.length === 0) throw fhirError('invalid', `_type takes ${FHIR_RESOURCE_TYPES.join(', ')}; got ${query._type}.`);
        if (query._since !== undefined && instantMillis(query._since) === undefined) throw fhirError('invalid', `_since must be a FHIR instant (e.g. 2026-01-02T03:04:05Z), ${INSTANT_RANGE_MESSAGE}.`);
        const count = query._count === undefined ? DEFAULT_COUNT : Number(query._count);
        if (!Number.isInteger(count) || count < 0) throw fhirError('invalid', `_count must be a whole number from 0 to ${MAX_COUNT}.`);
        if (!holdsScopeFor(principal, 'fhir:read', 'Patient')) throw fhirError('forbidden', 'The access token\'s scopes do not allow reading Patient.');
        const patient = await findVisibleResource(ctx, principal, 'Patient', params.id);
        if (patient.erased) throw gone();
        const request = {
          patientId: params.id,
          // A SMART token gets only the types its scopes grant.
          types: FHIR_RESOURCE_TYPES.filter((type) => types.includes(type) && holdsScopeFor(principal, 'fhir:read', type)),
          since: query._since ?? null,
          count: Math.min(count, MAX_COUNT),
          cursor: query._cursor === undefined ? null : decodeEverythingCursor(query._cursor),
        };
        const result = await patientEverything(ctx.db.slonik, principal.employerId, request);
        const link = (relation: string, cursor: string | undefined) => {
          const search = new URLSearchParams({ ...(query._type ? { _type: query._type } : {}), ...(query._since ? { _since: query._since } : {}), _count: String(request.count) });
          if (cursor) search.set('_cursor', cursor);
          return { relation, url: `${base}/Patient/${params.id}/$everything?${search}` };
        };
        return {
          resourceType: 'Bundle',
          type: 'searchset',
          total: result.total,
          link: [link('self', query._cursor), ...(result.next ? [link('next', encodeEverythingCursor(result.next))] : [])],
          ...(result.resources.length === 0 ? {} : {
            entry: result.resources.map((resource) => ({ fullUrl: `${base}/${resource.resourceType}/${resource.id}`, resource: resource as never, search: { mode: 'match' as const } })),
          }),
        };
      },
    }),
};
