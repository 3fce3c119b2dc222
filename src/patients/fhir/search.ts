// Search (GET /api/fhir/:resourceType and POST _search): a searchset Bundle, keyset-paged through its
// next and previous links, with the resources _include and _revinclude add (search.mode include), cut
// down by _elements or _summary (subset.ts). The SQL is the read model's
// (projections/fhir-resources/search.ts); a PATIENT session's search, and what it includes, is confined
// to its compartment.
import type { Bundle } from '@medplum/fhirtypes';
import { z } from 'zod';
import { holdsScopeFor, type Principal } from '../../auth/principal.ts';
import { SEARCH_PARAMETERS } from '../../../projections/fhir-resources/search-parameters.ts';
import {
  encodeSearchCursor, includeValues, MAX_COUNT, MAX_INCLUDED, parseSearch, revIncludeValues, runInclusions, runSearch, type QueryParameters, type SearchRequest, type SearchResult,
} from '../../../projections/fhir-resources/search.ts';
import type { FhirJson } from '../events.ts';
import { compartmentCondition, compartmentOf } from './compartment.ts';
import { fhirBundleSchema, fhirResponse, knownType, readAuth, typeParams, type FhirApi, type FhirInteraction } from './interaction.ts';
import { fhirError } from './outcome.ts';
import { requestedSubset, subset, subsetQuery, SUMMARY_VALUES, type Summary } from './subset.ts';

const searchValue = z.union([z.string().max(2000), z.array(z.string().max(2000)).max(20)]);
const searchQuery = z
  .object({
    _count: z.string().max(10).optional().meta({ description: `Page size, default 20, at most ${MAX_COUNT} (larger values are capped); 0 gives only the total.` }),
    _sort: z.string().max(20).optional().meta({ description: '_lastUpdated (default) or -_lastUpdated' }),
    _cursor: z.string().max(400).optional().meta({ description: 'Paging state; taken from a next or previous link, never made up.' }),
    _include: searchValue.optional().meta({ description: `Include the Patients the matches reference: <Type>:subject or <Type>:patient of the searched type (:iterate accepted, nothing further to follow); at most ${MAX_INCLUDED} included resources a page.` }),
    _revinclude: searchValue.optional().meta({ description: 'Searching Patients, include the resources that reference them: <Type>:subject or <Type>:patient (see /api/fhir/metadata searchRevInclude).' }),
    ...subsetQuery,
  })
  .catchall(searchValue)
  .meta({ description: "Search parameters of the type (see /api/fhir/metadata); unknown ones are 400 'invalid'." });

/** Parameters every type searches by, columns of fhir_resources. */
const COMMON_PARAMETERS = [
  { name: '_id', type: 'token', documentation: 'The resource id' },
  { name: '_lastUpdated', type: 'date', documentation: 'When the resource last changed (also the one sort key: _sort=_lastUpdated, the default, or -_lastUpdated)' },
] as const;

const single = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** A search as the caller may make it (a PATIENT session's confined to its compartment): a searchset Bundle. Also a bundle's GET entry (bundle.ts). */
export async function searchAs({ ctx, base }: Pick<FhirApi, 'ctx' | 'base'>, principal: Principal, type: string, parameters: QueryParameters): Promise<Bundle> {
  const resourceType = knownType(type);
  const request = parseSearch(resourceType, parameters, { employerId: principal.employerId, encryptionKey: ctx.encryptionKey });
  const summary = single(parameters._summary);
  if (summary !== undefined && !(SUMMARY_VALUES as readonly string[]).includes(summary)) throw fhirError('invalid', `_summary is one of ${SUMMARY_VALUES.join(', ')}.`);
  const keys = requestedSubset(resourceType, { _elements: single(parameters._elements), _summary: summary as Summary | undefined });
  const restrictions = compartmentCondition(await compartmentOf(ctx, principal));
  const result = await runSearch(ctx.db.slonik, principal.employerId, { ...request, conditions: [...request.conditions, ...restrictions] });
  const refused = request.inclusions.map((inclusion) => (inclusion.direction === 'include' ? 'Patient' : inclusion.sourceType)).find((type) => !holdsScopeFor(principal, 'fhir:read', type));
  if (refused) throw fhirError('forbidden', `The access token's scopes do not allow reading ${refused}, which _include/_revinclude asks for.`);
  const included = await runInclusions(ctx.db.slonik, principal.employerId, request, result.resources, restrictions);
  const shown = (resource: FhirJson) => (keys === null || resource.resourceType !== resourceType ? resource : subset(resource, keys));
  return searchBundle(base, request, { ...result, resources: result.resources.map(shown) }, included);
}

function searchRoutes(api: FhirApi) {
  const { route } = api;
  const search = (principal: Principal, type: string, parameters: QueryParameters) => searchAs(api, principal, type, parameters);

  route({
    method: 'GET',
    url: '/:resourceType',
    summary: 'Search resources of a type (a searchset Bundle, keyset-paged through its next and previous links)',
    auth: readAuth,
    params: typeParams,
    querystring: searchQuery,
    responses: { 200: fhirResponse('Bundle of type searchset', fhirBundleSchema) },
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
    responses: { 200: fhirResponse('Bundle of type searchset', fhirBundleSchema) },
    handler: async ({ params, query, body, principal }) => {
      const merged: QueryParameters = { ...(query as QueryParameters) };
      for (const [name, value] of Object.entries(body ?? {})) merged[name] = [...[merged[name] ?? []].flat(), ...[value].flat()];
      return search(principal, params.resourceType, merged);
    },
  });
}

export const searchInteraction: FhirInteraction = {
  statement: {
    resource: (resourceType) => ({
      interaction: [{ code: 'search-type' }],
      searchParam: [...COMMON_PARAMETERS, ...SEARCH_PARAMETERS[resourceType]].map(({ name, type, documentation }) => ({ name, type, documentation })),
      searchInclude: includeValues(resourceType),
      searchRevInclude: revIncludeValues(resourceType),
    }),
  },
  routes: searchRoutes,
};

function searchBundle(base: string, request: SearchRequest, result: SearchResult, included: FhirJson[]): Bundle {
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
      entry: [
        ...result.resources.map((resource) => ({ fullUrl: `${base}/${resource.resourceType}/${resource.id}`, resource: resource as never, search: { mode: 'match' as const } })),
        ...included.map((resource) => ({ fullUrl: `${base}/${resource.resourceType}/${resource.id}`, resource: resource as never, search: { mode: 'include' as const } })),
      ],
    }),
  };
}
