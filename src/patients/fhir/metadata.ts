// GET /api/fhir/metadata: the CapabilityStatement, built from the same data as the API: the resource
// types and their search parameters (projections/fhir-resources/search-parameters.ts).
import { createHash } from 'node:crypto';
import type { CapabilityStatement } from '@medplum/fhirtypes';
import { API_VERSION_INFO } from '../../http/server.ts';
import { SEARCH_PARAMETERS } from '../../../projections/fhir-resources/search-parameters.ts';
import { MAX_COUNT } from '../../../projections/fhir-resources/search.ts';
import { FHIR_RESOURCE_TYPES } from '../events.ts';
import { fhirResponse, readAuth, type FhirApi } from './interaction.ts';
import { FHIR_CONTENT_TYPE } from './outcome.ts';

export function metadataInteraction({ route, base }: FhirApi) {
  const capability = buildCapabilityStatement(base, new Date().toISOString());
  route({
    method: 'GET',
    url: '/metadata',
    summary: 'The CapabilityStatement: resource types, interactions and search parameters',
    auth: readAuth,
    responses: { 200: fhirResponse('CapabilityStatement') },
    handler: async ({ reply }) => {
      reply.header('etag', capability.etag);
      return capability.statement;
    },
  });
}

const COMMON_PARAMETERS = [
  { name: '_id', type: 'token', documentation: 'The resource id' },
  { name: '_lastUpdated', type: 'date', documentation: 'When the resource last changed (also the sort key: _sort=_lastUpdated or -_lastUpdated)' },
] as const;

function buildCapabilityStatement(baseUrl: string, date: string): { statement: CapabilityStatement; etag: string } {
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
    rest: [
      {
        mode: 'server',
        documentation: `Searches page by keyset: _count defaults to 20, at most ${MAX_COUNT}; _count=0 gives only the total. Rate limit: 120 requests a minute per employer.`,
        security: { description: 'x-api-key with fhir:read (GET) or fhir:write (POST, PUT), plus x-api-version; or a browser session.' },
        interaction: (['transaction', 'batch'] as const).map((code) => ({ code })),
        resource: FHIR_RESOURCE_TYPES.map((type) => ({
          type,
          interaction: (['read', 'vread', 'update', 'create', 'search-type', 'delete', 'history-instance', 'history-type'] as const).map((code) => ({ code })),
          versioning: 'versioned' as const,
          readHistory: true,
          updateCreate: false,
          conditionalCreate: true,
          conditionalUpdate: false,
          searchParam: [...COMMON_PARAMETERS, ...SEARCH_PARAMETERS[type]].map(({ name, type: paramType, documentation }) => ({ name, type: paramType, documentation })),
        })),
      },
    ],
  };
  const etag = `W/"${createHash('sha256').update(JSON.stringify(statement)).digest('base64url').slice(0, 22)}"`;
  return { statement, etag };
}
