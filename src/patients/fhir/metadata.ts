// GET /api/fhir/metadata: the CapabilityStatement, made of what each interaction and operation says
// of itself (its `statement`, interaction.ts) over the resource types served: interactions, search
// parameters and _include/_revinclude values (from projections/fhir-resources/search-parameters.ts),
// operations. Serving a new interaction adds it here by its own declaration, nothing else. Anonymous,
// as FHIR and SMART clients read it before they hold credentials; an API key presented is still checked.
import { createHash } from 'node:crypto';
import type { CapabilityStatement, CapabilityStatementRest, CapabilityStatementRestResource } from '@medplum/fhirtypes';
import { authenticate } from '../../auth/authenticate.ts';
import { API_VERSION_INFO } from '../../http/server.ts';
import { TOKEN_PATH } from '../../smart-clients/routes/oauth.ts';
import { MAX_COUNT } from '../../../projections/fhir-resources/search.ts';
import { FHIR_RESOURCE_TYPES } from '../events.ts';
import { capabilityStatementSchema, fhirResponse, readAuth, type FhirInteraction, type StatementPart } from './interaction.ts';
import { FHIR_CONTENT_TYPE } from './outcome.ts';

export const metadataInteraction: FhirInteraction = {
  statement: {},
  routes: ({ ctx, route, base, statement }) => {
    const capability = buildCapabilityStatement(base, `${ctx.config.PUBLIC_BASE_URL}${TOKEN_PATH}`, new Date().toISOString(), statement);
    route({
      method: 'GET',
      url: '/metadata',
      summary: 'The CapabilityStatement: resource types, interactions, search parameters and operations',
      description: 'Needs no credentials. A caller who presents an API key (x-api-key) is checked as on every key-authenticated route: the key must be valid and hold fhir:read, with x-api-version.',
      auth: { public: true },
      responses: {
        200: fhirResponse('CapabilityStatement', capabilityStatementSchema),
        400: { description: 'With an API key: x-api-version missing or unsupported' },
        401: { description: 'With an API key: the key is unknown, revoked or expired' },
        403: { description: 'With an API key: the key lacks fhir:read' },
        429: { description: 'More FHIR requests a minute than allowed, for this address (anonymous) or employer' },
      },
      handler: async ({ request, reply }) => {
        if (request.headers['x-api-key'] !== undefined) await authenticate(ctx, request, reply, readAuth);
        reply.header('etag', capability.etag);
        return capability.statement;
      },
    });
  },
};

/** `part` laid over `whole`: arrays concatenate, other values are set. */
function merged<T extends object>(whole: T, part: Partial<T>): T {
  const result = { ...whole } as Record<string, unknown>;
  for (const [key, value] of Object.entries(part)) {
    const current = result[key];
    result[key] = Array.isArray(current) && Array.isArray(value) ? [...current, ...value] : value;
  }
  return result as T;
}

function buildCapabilityStatement(baseUrl: string, tokenEndpoint: string, date: string, parts: StatementPart[]): { statement: CapabilityStatement; etag: string } {
  const resources = FHIR_RESOURCE_TYPES.map((type) =>
    parts.reduce<CapabilityStatementRestResource>((resource, part) => (part.resource ? merged(resource, part.resource(type)) : resource), { type }),
  );
  const rest = parts.reduce<CapabilityStatementRest>((whole, part) => (part.rest ? merged(whole, part.rest) : whole), {
    mode: 'server',
    documentation: `Searches page by keyset: _count defaults to 20, at most ${MAX_COUNT}; _count=0 or _summary=count gives only the total. _sort: _lastUpdated (the default) or -_lastUpdated. Rate limit: 120 requests a minute per employer.`,
    security: {
      service: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'SMART-on-FHIR' }] }],
      extension: [{ url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris', extension: [{ url: 'token', valueUri: tokenEndpoint }] }],
      description: 'SMART Backend Services access token (Authorization: Bearer; see .well-known/smart-configuration); or x-api-key with fhir:read (GET) or fhir:write (POST, PUT, DELETE), plus x-api-version; or a browser session.',
    },
    resource: resources,
  });
  const statement: CapabilityStatement = {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date,
    publisher: 'employer-integrations',
    kind: 'instance',
    software: { name: API_VERSION_INFO.title, version: API_VERSION_INFO.version },
    implementation: { description: 'Employer integrations FHIR R4 API', url: baseUrl },
    fhirVersion: '4.0.1',
    format: [FHIR_CONTENT_TYPE, 'json'],
    rest: [rest],
  };
  const etag = `W/"${createHash('sha256').update(JSON.stringify(statement)).digest('base64url').slice(0, 22)}"`;
  return { statement, etag };
}
