// Batch and transaction (POST /api/fhir with a Bundle of type batch or transaction), answering a
// batch-response or transaction-response Bundle, its entries in the request's order. At most
// MAX_BUNDLE_ENTRIES entries (400 beyond), each a request of the employer's FHIR rate limit. Entries:
// POST (create, conditional with ifNoneExist), PUT (update, conditional with ifMatch), DELETE of one
// resource (`Type/id`), and GET: a read (`Type/id`) or a search (`Type?...`, a searchset Bundle as the
// entry's resource). Each entry needs fhir:read (GET) or fhir:write (the others) for its type: a SMART
// token's type limits apply to entries as they do to the routes with the type in their path.
// - transaction: every write in one append, or none (writeTogether); `urn:uuid:` fullUrls of created
//   entries are resolved to the ids assigned (a conditional create's to its match) in every reference;
//   writes are planned DELETE, POST (Patients first, so resources may name them as subject), PUT, and
//   GETs read after them, as R4 orders them. Any refused entry refuses the transaction (its
//   OperationOutcome names the entry). A Patient cannot be deleted in one: its erasure destroys a data
//   key, which no append undoes.
// - batch: each entry on its own, as its own route would do it, with its own status (an
//   OperationOutcome for a refused one).
import { randomUUID } from 'node:crypto';
import type { Bundle, BundleEntry } from '@medplum/fhirtypes';
import { z } from 'zod';
import { commandContextOf, holdsScopeFor, type Principal } from '../../auth/principal.ts';
import { DomainError } from '../../event-store/decider.ts';
import type { QueryParameters } from '../../../projections/fhir-resources/search.ts';
import { toServiceError } from '../../http/errors.ts';
import { createFhirResource, planCreate, planDelete, planUpdate, updateFhirResource, writeTogether, type PlannedPatients, type PlannedWrite, type WrittenVersion } from '../commands.ts';
import type { FhirJson, FhirResourceType } from '../events.ts';
import { gone } from '../patient.ts';
import { existingMatch } from './create.ts';
import { deleteAs } from './delete.ts';
import { acceptedResource, fhirBundleSchema, fhirResponse, findVisibleResource, ifMatchVersion, knownType, readable, representation, writeAuth, type FhirApi, type FhirInteraction } from './interaction.ts';
import { fhirError, fhirErrorShape } from './outcome.ts';
import { searchAs } from './search.ts';

export const MAX_BUNDLE_ENTRIES = 100;

const bundleEntry = z.object({
  fullUrl: z.string().max(2000).optional(),
  resource: z.record(z.string().max(100), z.unknown()).optional(),
  request: z.object({
    method: z.enum(['GET', 'POST', 'PUT', 'DELETE']),
    url: z.string().min(1).max(2000).meta({ description: 'Type (POST), Type/id, or Type?search (GET), relative to the FHIR base (or absolute under it)' }),
    ifNoneExist: z.string().max(2000).optional(),
    ifMatch: z.string().max(40).optional(),
  }),
});
type Entry = z.infer<typeof bundleEntry>;
const bundleBody = z.object({
  resourceType: z.literal('Bundle'),
  type: z.enum(['batch', 'transaction']),
  entry: z.array(bundleEntry).max(MAX_BUNDLE_ENTRIES).optional(),
}).meta({ description: `A FHIR Bundle of type batch or transaction, at most ${MAX_BUNDLE_ENTRIES} entries` });

const id = /^[A-Za-z0-9.-]{1,64}$/;
const STATUS_TEXT: Record<number, string> = { 200: '200 OK', 201: '201 Created', 204: '204 No Content' };

function bundleRoutes({ ctx, route, base, spendRequests }: FhirApi) {
  /**
   * What an entry's url names: `Type`, `Type/id` or (GET) `Type?search`, relative or under the base;
   * 403 unless the caller holds fhir:read (GET) or fhir:write (the others) for that type: an API key
   * for every type, a SMART token for the types its scopes name (as the routes with the type in their
   * path check it when authenticating).
   */
  function targetOf(principal: Principal, entry: Entry): { resourceType: FhirResourceType; id?: string; search?: QueryParameters } {
    const url = entry.request.url.startsWith(`${base}/`) ? entry.request.url.slice(base.length + 1) : entry.request.url;
    const mark = url.indexOf('?');
    const path = mark < 0 ? url : url.slice(0, mark);
    const search = mark < 0 ? undefined : url.slice(mark + 1);
    const [type, resourceId, ...rest] = path.split('/');
    const { method } = entry.request;
    if (rest.length > 0 || (resourceId !== undefined && !id.test(resourceId)) || (search !== undefined && (method !== 'GET' || resourceId !== undefined))) {
      throw fhirError('invalid', `request.url ${entry.request.url} is not Type, Type/id or (GET) Type?search.`);
    }
    const resourceType = knownType(type!);
    const scope = method === 'GET' ? 'fhir:read' : 'fhir:write';
    if (!holdsScopeFor(principal, scope, resourceType)) throw fhirError('forbidden', `${method} entries of ${resourceType} need ${scope} for ${resourceType}.`);
    if (method === 'POST' && resourceId !== undefined) throw fhirError('invalid', 'A POST entry names the type only: the server assigns the id.');
    if (method !== 'POST' && method !== 'GET' && resourceId === undefined) throw fhirError('invalid', `A ${method} entry names one resource: Type/id.`);
    if (resourceId !== undefined) return { resourceType, id: resourceId };
    if (method !== 'GET') return { resourceType };
    // Repeated parameters as arrays, as fastify parses a query string (own properties only: fromEntries).
    const parameters = new Map<string, string[]>();
    for (const [name, value] of new URLSearchParams(search ?? '')) parameters.set(name, [...(parameters.get(name) ?? []), value]);
    return { resourceType, search: Object.fromEntries([...parameters].map(([name, values]) => [name, values.length === 1 ? values[0] : values])) };
  }

  const bodyOf = (entry: Entry, resourceType: FhirResourceType) => acceptedResource(resourceType, entry.resource ?? {});

  const writtenEntry = (status: number, resourceType: FhirResourceType, written: WrittenVersion, resource: FhirJson): BundleEntry => {
    const served = representation(resourceType, written, resource);
    return { fullUrl: `${base}/${resourceType}/${written.id}`, resource: served as never, response: responseOf(status, served) };
  };
  // No fullUrl: a transaction's GET may read the version another entry wrote, and a Bundle's fullUrls
  // are unique per version (bdl-7); the resource and its location name it.
  const servedEntry = (resource: FhirJson): BundleEntry => ({ resource: resource as never, response: responseOf(200, resource) });
  const deletedEntry = (version: number | null): BundleEntry => ({ response: { status: STATUS_TEXT[204]!, ...(version === null ? {} : { etag: `W/"${version}"` }) } });

  /** A GET entry (its scope checked by targetOf): a read, or a search answered as a searchset Bundle. */
  async function read(principal: Principal, target: ReturnType<typeof targetOf>): Promise<BundleEntry> {
    const { resourceType, id: resourceId } = target;
    if (resourceId === undefined) return { resource: await searchAs({ ctx, base }, principal, resourceType, target.search ?? {}), response: { status: STATUS_TEXT[200]! } };
    return servedEntry(readable(await findVisibleResource(ctx, principal, resourceType, resourceId), resourceType, resourceId));
  }

  /** A batch entry, done as its own route does it. */
  async function alone(principal: Principal, requestId: string, entry: Entry): Promise<BundleEntry> {
    const target = targetOf(principal, entry);
    const { resourceType } = target;
    const context = commandContextOf(principal, requestId);
    const expectedVersion = ifMatchVersion(entry.request.ifMatch);
    switch (entry.request.method) {
      case 'GET':
        return read(principal, target);
      case 'POST': {
        const resource = bodyOf(entry, resourceType);
        const match = entry.request.ifNoneExist === undefined ? null : await existingMatch(ctx, principal, resourceType, entry.request.ifNoneExist);
        if (match) return servedEntry(match);
        return writtenEntry(201, resourceType, await createFhirResource(ctx, context, { resourceType, resource }), resource);
      }
      case 'PUT': {
        const resource = bodyOf(entry, resourceType);
        const written = await updateFhirResource(ctx, context, { resourceType, id: target.id!, resource, ...(expectedVersion === undefined ? {} : { expectedVersion }) });
        return writtenEntry(200, resourceType, written, resource);
      }
      case 'DELETE':
        return deletedEntry(await deleteAs(ctx, principal, requestId, resourceType, target.id!, expectedVersion));
    }
  }

  async function batch(principal: Principal, requestId: string, entries: Entry[]): Promise<BundleEntry[]> {
    const answers: BundleEntry[] = [];
    for (const entry of entries) {
      try {
        answers.push(await alone(principal, requestId, entry));
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        const refused = toServiceError(error);
        answers.push({ response: { status: String(refused.status), outcome: fhirErrorShape(refused, { id: requestId }).body as never } });
      }
    }
    return answers;
  }

  async function transaction(principal: Principal, requestId: string, entries: Entry[]): Promise<BundleEntry[]> {
    const context = commandContextOf(principal, requestId);
    const answers: (BundleEntry | undefined)[] = entries.map(() => undefined);
    // Targets, bodies and conditional creates first: the ids every urn:uuid: names.
    const references = new Map<string, string>();
    const prepared = [];
    for (const [index, entry] of entries.entries()) {
      prepared.push(await atEntry(index, async () => {
        const target = targetOf(principal, entry);
        const resource = entry.request.method === 'POST' || entry.request.method === 'PUT' ? bodyOf(entry, target.resourceType) : null;
        if (entry.request.method !== 'POST') return { entry, target, resource, newId: null };
        const match = entry.request.ifNoneExist === undefined ? null : await existingMatch(ctx, principal, target.resourceType, entry.request.ifNoneExist);
        const newId = match ? null : randomUUID();
        if (entry.fullUrl !== undefined) references.set(entry.fullUrl, `${target.resourceType}/${match ? match.id : newId}`);
        if (match) answers[index] = servedEntry(match);
        return { entry, target, resource, newId };
      }));
    }
    const resolved = prepared.map((item) => ({ ...item, resource: item.resource && (resolveReferences(item.resource, references) as FhirJson) }));

    const order = (method: string, type: FhirResourceType) => ['DELETE', 'POST', 'PUT'].indexOf(method) * 2 + (type === 'Patient' ? 0 : 1);
    const writes = resolved
      .map((item, index) => ({ ...item, index }))
      .filter(({ entry, newId }) => entry.request.method !== 'GET' && !(entry.request.method === 'POST' && newId === null))
      .sort((a, b) => order(a.entry.request.method, a.target.resourceType) - order(b.entry.request.method, b.target.resourceType));
    const written = await writeTogether(ctx, async () => {
      const planned: PlannedPatients = new Map();
      const plans: PlannedWrite[] = [];
      for (const { entry, target, resource, newId, index } of writes) {
        plans.push(await atEntry(index, async () => {
          const { resourceType } = target;
          const expectedVersion = ifMatchVersion(entry.request.ifMatch);
          const ifMatch = expectedVersion === undefined ? {} : { expectedVersion };
          if (entry.request.method === 'POST') return planCreate(ctx, context, { resourceType, resource: resource!, id: newId! }, planned);
          if (entry.request.method === 'PUT') return planUpdate(ctx, context, { resourceType, id: target.id!, resource: resource!, ...ifMatch }, planned);
          if (resourceType === 'Patient') throw fhirError('invalid', 'A transaction cannot delete a Patient: its erasure is done alone (DELETE /api/fhir/Patient/{id}).');
          if ((await findVisibleResource(ctx, principal, resourceType, target.id!)).erased) throw gone();
          return planDelete(context, { resourceType, id: target.id!, ...ifMatch });
        }));
      }
      return plans;
    });
    writes.forEach(({ entry, target, resource, index }, position) => {
      const version = written[position]!;
      answers[index] = entry.request.method === 'DELETE' ? deletedEntry(version.versionId) : writtenEntry(entry.request.method === 'POST' ? 201 : 200, target.resourceType, version, resource!);
    });
    for (const [index, { entry, target }] of resolved.entries()) {
      if (entry.request.method === 'GET') answers[index] = await atEntry(index, () => read(principal, target));
    }
    return answers as BundleEntry[];
  }

  route({
    method: 'POST',
    url: '',
    // The base with its trailing slash too: fhir-kit-client posts to the one, fhirclient to the other.
    aliases: ['/'],
    operationId: 'postFhirBundle',
    summary: 'A batch or transaction Bundle: answers a batch-response or transaction-response Bundle',
    description: `At most ${MAX_BUNDLE_ENTRIES} entries, each a request of the FHIR rate limit. Entries: POST Type (create; ifNoneExist makes it conditional and needs fhir:read), PUT Type/id (update; ifMatch), DELETE Type/id, GET Type/id or Type?search (needs fhir:read). A SMART token's entries are limited to the types its scopes name for the entry's scope (403 otherwise). ` +
      'transaction: all writes in one append or none; urn:uuid: fullUrls of created entries are resolved in references; any refused entry refuses the whole transaction with its OperationOutcome; a Patient cannot be deleted in one. ' +
      'batch: each entry on its own, with its own status (and OperationOutcome when refused).',
    auth: writeAuth,
    body: bundleBody,
    idempotent: true,
    responses: { 200: fhirResponse('Bundle of type batch-response or transaction-response', fhirBundleSchema) },
    handler: async ({ body, principal, request, reply }): Promise<Bundle> => {
      const entries = body.entry ?? [];
      // Each entry is a request of the rate limit (the call itself spent one).
      spendRequests(principal.employerId, reply, entries.length - 1);
      const answers = body.type === 'batch' ? await batch(principal, request.id, entries) : await transaction(principal, request.id, entries);
      return { resourceType: 'Bundle', type: `${body.type}-response`, ...(answers.length === 0 ? {} : { entry: answers }) };
    },
  });
}

export const bundleInteraction: FhirInteraction = {
  statement: { rest: { interaction: [{ code: 'transaction' }, { code: 'batch' }] } },
  routes: bundleRoutes,
};

function responseOf(status: number, resource: FhirJson): NonNullable<BundleEntry['response']> {
  return {
    status: STATUS_TEXT[status]!,
    location: `${resource.resourceType}/${resource.id}/_history/${resource.meta.versionId}`,
    etag: `W/"${resource.meta.versionId}"`,
    lastModified: resource.meta.lastUpdated,
  };
}

/** Runs the work of entry `index`, naming the entry in a refusal. */
async function atEntry<T>(index: number, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    throw new DomainError(error.kind, error.code, `entry ${index}: ${error.message}`, error.details);
  }
}

/** Every `reference` naming a fullUrl of the transaction, replaced with the `Type/id` it was given. */
function resolveReferences(value: unknown, references: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveReferences(item, references));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([name, item]) =>
    [name, name === 'reference' && typeof item === 'string' && references.has(item) ? references.get(item) : resolveReferences(item, references)]));
}
