// Search (GET /api/fhir/:resourceType and POST _search): a searchset Bundle, keyset-paged through its
// next and previous links. The SQL is the read model's (projections/fhir-resources/search.ts); a
// PATIENT session's search is confined to its compartment.
import type { Bundle } from '@medplum/fhirtypes';
import { z } from 'zod';
import type { Principal } from '../../auth/principal.ts';
import { encodeSearchCursor, MAX_COUNT, parseSearch, runSearch, type QueryParameters, type SearchRequest } from '../../../projections/fhir-resources/search.ts';
import { compartmentCondition, compartmentOf } from './compartment.ts';
import { fhirResponse, knownType, readAuth, typeParams, type FhirApi } from './interaction.ts';

const searchValue = z.union([z.string().max(2000), z.array(z.string().max(2000)).max(20)]);
const searchQuery = z
  .object({
    _count: z.string().max(10).optional().meta({ description: `Page size, default 20, at most ${MAX_COUNT} (larger values are capped); 0 gives only the total.` }),
    _sort: z.string().max(20).optional().meta({ description: '_lastUpdated (default) or -_lastUpdated' }),
    _cursor: z.string().max(400).optional().meta({ description: 'Paging state; taken from a next or previous link, never made up.' }),
  })
  .catchall(searchValue)
  .meta({ description: "Search parameters of the type (see /api/fhir/metadata); unknown ones are 400 'invalid'." });

/** A search as the caller may make it (a PATIENT session's confined to its compartment): a searchset Bundle. Also a bundle's GET entry (bundle.ts). */
export async function searchAs({ ctx, base }: Pick<FhirApi, 'ctx' | 'base'>, principal: Principal, type: string, parameters: QueryParameters): Promise<Bundle> {
  const resourceType = knownType(type);
  const request = parseSearch(resourceType, parameters, { employerId: principal.employerId, encryptionKey: ctx.encryptionKey });
  const restricted = { ...request, conditions: [...request.conditions, ...compartmentCondition(await compartmentOf(ctx, principal))] };
  return searchBundle(base, request, await runSearch(ctx.db.slonik, principal.employerId, restricted));
}

export function searchInteraction(api: FhirApi) {
  const { route } = api;
  const search = (principal: Principal, type: string, parameters: QueryParameters) => searchAs(api, principal, type, parameters);

  route({
    method: 'GET',
    url: '/:resourceType',
    summary: 'Search resources of a type (a searchset Bundle, keyset-paged through its next and previous links)',
    auth: readAuth,
    params: typeParams,
    querystring: searchQuery,
    responses: { 200: fhirResponse('Bundle of type searchset') },
    handler: async ({ params, query, principal }) => search(principal, params.resourceType, query as QueryParameters),
  });

  route({
    method: 'POST',
    url: '/:resourceType/_search',
    summary: 'Search with the parameters in a form body (and the query string)',
    auth: readAuth,
    params: typeParams,
    querystring: searchQuery,
    body: z.record(z.string().max(100), searchValue).optional(),
    responses: { 200: fhirResponse('Bundle of type searchset') },
    handler: async ({ params, query, body, principal }) => {
      const merged: QueryParameters = { ...(query as QueryParameters) };
      for (const [name, value] of Object.entries(body ?? {})) merged[name] = [...[merged[name] ?? []].flat(), ...[value].flat()];
      return search(principal, params.resourceType, merged);
    },
  });
}

function searchBundle(base: string, request: SearchRequest, result: Awaited<ReturnType<typeof runSearch>>): Bundle {
  const link = (relation: string, cursor: string | null) => {
    const query = new URLSearchParams(request.filters);
    query.set('_count', String(request.count));
    if (request.descending) query.set('_sort', '-_lastUpdated');
    if (cursor) query.set('_cursor', cursor);
    return { relation, url: `${base}/${request.resourceType}?${query}` };
  };
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    total: result.total,
    link: [
      link('self', request.cursor ? encodeSearchCursor(request.cursor) : null),
      ...(result.next ? [link('next', encodeSearchCursor(result.next))] : []),
      ...(result.previous ? [link('previous', encodeSearchCursor(result.previous))] : []),
    ],
    // FHIR JSON has no empty arrays: a page without entries (_count=0, no match) leaves `entry` out.
    ...(result.resources.length === 0 ? {} : {
      entry: result.resources.map((resource) => ({ fullUrl: `${base}/${resource.resourceType}/${resource.id}`, resource: resource as never, search: { mode: 'match' as const } })),
    }),
  };
}
