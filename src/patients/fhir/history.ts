// History (GET /api/fhir/:resourceType/:id/_history and /api/fhir/:resourceType/_history): `history`
// Bundles, newest version first, keyset-paged through next links, with _since and _count. Which
// versions exist comes from the read model (fhir_resource_versions: ids and versions only); what each
// holds from the event that wrote it, opened as vread opens it (versions.ts). Each entry carries its
// request (POST for version 1, PUT, DELETE) and response; a deletion has no resource. An erased
// patient's resources have no history (410 for one of them, left out of a type's).
import type { Bundle, BundleEntry } from '@medplum/fhirtypes';
import { z } from 'zod';
import type { Principal } from '../../auth/principal.ts';
import { dataKeys } from '../../crypto/personal-data.ts';
import { instantSchema } from '../../http/instant.ts';
import {
  decodeHistoryCursor, encodeHistoryCursor, HISTORY_DEFAULT_COUNT, HISTORY_MAX_COUNT, historyPage, type VersionRow,
} from '../../../projections/fhir-resources/history.ts';
import type { FhirResourceType } from '../events.ts';
import { gone } from '../patient.ts';
import { compartmentCondition, compartmentOf } from './compartment.ts';
import { fhirBundleSchema, fhirResponse, findVisibleResource, knownType, readAuth, resourceParams, typeParams, type FhirApi, type FhirInteraction } from './interaction.ts';
import { streamOf, versionOf, type ResourceVersion } from './versions.ts';

const historyQuery = z.object({
  _since: instantSchema.optional().meta({ description: 'Only versions written at or after this instant' }),
  _count: z.string().max(10).regex(/^\d+$/, 'a whole number').optional().meta({ description: `Page size, default ${HISTORY_DEFAULT_COUNT}, at most ${HISTORY_MAX_COUNT} (larger values are capped); 0 gives only the total.` }),
  _cursor: z.string().max(400).optional().meta({ description: 'Paging state; taken from a next link, never made up.' }),
});
type HistoryQuery = z.infer<typeof historyQuery>;

function historyRoutes({ ctx, route, base }: FhirApi) {
  /** The versions of a page, opened from their events (one stream read per resource); erased meanwhile: left out. */
  async function openVersions(employerId: string, resourceType: FhirResourceType, rows: VersionRow[]): Promise<{ id: string; version: ResourceVersion }[]> {
    const keys = await dataKeys(ctx.db.slonik, ctx.encryptionKey, employerId, [...new Set(rows.map((row) => row.patientId))]);
    const oldest = new Map<string, number>();
    for (const row of rows) oldest.set(row.id, Math.min(row.versionId, oldest.get(row.id) ?? row.versionId));
    const events = new Map(await Promise.all([...oldest].map(async ([id, version]) =>
      [id, await ctx.eventStore.readStream(streamOf(employerId, resourceType, id), { fromRevision: BigInt(version - 1) })] as const)));
    return rows.flatMap((row) => {
      const key = keys.get(row.patientId);
      const event = events.get(row.id)?.find((candidate) => candidate.streamRevision === BigInt(row.versionId - 1));
      const version = key && event ? versionOf(event, key, employerId, resourceType, row.id) : null;
      return version ? [{ id: row.id, version }] : [];
    });
  }

  const entryOf = (resourceType: string, id: string, version: ResourceVersion): BundleEntry => {
    const created = version.versionId === 1;
    return {
      fullUrl: `${base}/${resourceType}/${id}`,
      ...(version.deleted ? {} : { resource: version.resource as never }),
      request: version.deleted ? { method: 'DELETE', url: `${resourceType}/${id}` } : created ? { method: 'POST', url: resourceType } : { method: 'PUT', url: `${resourceType}/${id}` },
      response: { status: version.deleted ? '204' : created ? '201' : '200', etag: `W/"${version.versionId}"`, lastModified: version.lastUpdated },
    };
  };

  async function history(principal: Principal, type: string, id: string | undefined, query: HistoryQuery): Promise<Bundle> {
    const resourceType = knownType(type);
    const { employerId } = principal;
    if (id !== undefined && (await findVisibleResource(ctx, principal, resourceType, id)).erased) throw gone();
    const count = Math.min(Number(query._count ?? HISTORY_DEFAULT_COUNT), HISTORY_MAX_COUNT);
    const page = await historyPage(ctx.db.slonik, employerId, {
      resourceType,
      ...(id === undefined ? {} : { id }),
      ...(query._since === undefined ? {} : { since: query._since }),
      count,
      cursor: query._cursor === undefined ? null : decodeHistoryCursor(query._cursor),
      conditions: compartmentCondition(await compartmentOf(ctx, principal)),
    });
    const link = (relation: string, cursor: string | undefined) => {
      const parameters = new URLSearchParams({ _count: String(count), ...(query._since === undefined ? {} : { _since: query._since }), ...(cursor === undefined ? {} : { _cursor: cursor }) });
      return { relation, url: `${base}/${resourceType}${id === undefined ? '' : `/${id}`}/_history?${parameters}` };
    };
    const entries = await openVersions(employerId, resourceType, page.versions);
    return {
      resourceType: 'Bundle',
      type: 'history',
      total: page.total,
      link: [link('self', query._cursor), ...(page.next ? [link('next', encodeHistoryCursor(page.next))] : [])],
      ...(entries.length === 0 ? {} : { entry: entries.map(({ id: entryId, version }) => entryOf(resourceType, entryId, version)) }),
    };
  }

  route({
    method: 'GET',
    url: '/:resourceType/:id/_history',
    summary: "A resource's versions, newest first (a history Bundle; deletions as entries without a resource)",
    auth: readAuth,
    params: resourceParams,
    querystring: historyQuery,
    responses: { 200: fhirResponse('Bundle of type history', fhirBundleSchema) },
    handler: async ({ params, query, principal }) => history(principal, params.resourceType, params.id, query),
  });

  route({
    method: 'GET',
    url: '/:resourceType/_history',
    summary: 'The versions of every resource of a type, newest first (a history Bundle)',
    auth: readAuth,
    params: typeParams,
    querystring: historyQuery,
    responses: { 200: fhirResponse('Bundle of type history', fhirBundleSchema) },
    handler: async ({ params, query, principal }) => history(principal, params.resourceType, undefined, query),
  });
}

export const historyInteraction: FhirInteraction = {
  statement: { resource: () => ({ interaction: [{ code: 'history-instance' }, { code: 'history-type' }] }) },
  routes: historyRoutes,
};
