// GET /api/fhir/metadata (src/patients/fhir/metadata.ts): the CapabilityStatement, driven by fhir-kit-client,
// says exactly what is served: each interaction, search parameter, _include/_revinclude value and
// operation it lists is answered, as the other test files show; here, that they are listed.
import { describe, expect, it } from 'vitest';
import { registeredRoutes } from '../support/route-list.ts';
import { client, base, responseOf, expectValid, service } from './fhir-api.ts';

/** The route each interaction code and operation of the statement stands for (fastify's syntax, under /api/fhir; `/` is /api/fhir itself). */
const ROUTE_OF: Record<string, string> = {
  'read': 'GET /:resourceType/:id',
  'vread': 'GET /:resourceType/:id/_history/:versionId',
  'update': 'PUT /:resourceType/:id',
  'create': 'POST /:resourceType',
  'search-type': 'GET /:resourceType',
  'delete': 'DELETE /:resourceType/:id',
  'history-instance': 'GET /:resourceType/:id/_history',
  'history-type': 'GET /:resourceType/_history',
  'system transaction': 'POST /',
  'system batch': 'POST /',
  'Patient everything': 'GET /Patient/:id/$everything',
  'Patient export': 'GET /Patient/$export',
  'Group export': 'GET /Group/:cohortId/$export',
  'system export': 'GET /$export',
};
/**
 * Routes under /api/fhir that are parts of what the statement lists (POST _search, POST kick-offs, Bulk
 * Data status and files), the statement itself, or SMART discovery (its rest.security names SMART-on-FHIR).
 */
const PARTS = ['GET /metadata', 'GET /.well-known/smart-configuration', 'POST /:resourceType/_search', 'POST /$export', 'POST /Patient/$export', 'POST /Group/:cohortId/$export',
  'GET /bulk-export/:exportId', 'DELETE /bulk-export/:exportId', 'GET /bulk-export/:exportId/files/:fileName'];

describe('metadata', () => {
  it('is a valid R4 CapabilityStatement with every type, its interactions and search parameters, and an ETag', async () => {
    const statement = expectValid(await client.capabilityStatement());
    expect(statement).toMatchObject({ resourceType: 'CapabilityStatement', status: 'active', kind: 'instance', fhirVersion: '4.0.1' });
    expect(statement.format).toContain('application/fhir+json');
    expect(statement.implementation.url).toBe(base);
    const types = statement.rest[0].resource.map((resource: any) => resource.type);
    expect(types).toEqual(['Patient', 'CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest', 'Group']);
    const patient = statement.rest[0].resource[0];
    expect(patient.interaction.map((i: any) => i.code)).toEqual(['search-type', 'read', 'vread', 'create', 'update', 'delete', 'history-instance', 'history-type']);
    expect(patient).toMatchObject({ versioning: 'versioned', readHistory: true, conditionalCreate: true, conditionalRead: 'not-match', updateCreate: false, conditionalDelete: 'not-supported' });
    expect(statement.rest[0].interaction.map((i: any) => i.code)).toEqual(['transaction', 'batch']);
    expect(patient.searchParam.map((p: any) => p.name)).toEqual(['_id', '_lastUpdated', 'email', 'identifier', 'name', 'family', 'given', 'birthdate']);
    expect(patient.searchInclude).toEqual([]);
    expect(patient.searchRevInclude).toEqual(['CarePlan:subject', 'CarePlan:patient', 'Observation:subject', 'Observation:patient', 'DiagnosticReport:subject', 'DiagnosticReport:patient', 'MedicationRequest:subject', 'MedicationRequest:patient']);
    expect(patient.operation).toEqual([
      { name: 'everything', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything' },
      { name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/patient-export' },
    ]);
    const observation = statement.rest[0].resource[2];
    expect(observation.searchInclude).toEqual(['Observation:subject', 'Observation:patient']);
    expect(observation.searchRevInclude).toEqual([]);
    expect(observation.operation).toBeUndefined();
    expect(statement.rest[0].operation).toEqual([{ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export' }]);
    expect(statement.rest[0].resource[5]).toEqual({ type: 'Group', operation: [{ name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/group-export' }] });
    expect(responseOf(statement).headers.get('etag')).toMatch(/^W\/".+"$/);
    expect(responseOf(statement).headers.get('content-type')).toContain('application/fhir+json');
  });

  it('lists exactly what is served: every interaction and operation it names is a route, and every FHIR route is one of them or a part of one', async () => {
    const statement = (await client.capabilityStatement()) as any;
    const rest = statement.rest[0];
    const listed = new Set<string>([
      ...rest.resource.flatMap((resource: any) => (resource.interaction ?? []).map((interaction: any) => ROUTE_OF[interaction.code])),
      ...rest.resource.flatMap((resource: any) => (resource.operation ?? []).map((operation: any) => ROUTE_OF[`${resource.type} ${operation.name}`])),
      ...(rest.operation ?? []).map((operation: any) => ROUTE_OF[`system ${operation.name}`]),
      ...(rest.interaction ?? []).map((interaction: any) => ROUTE_OF[`system ${interaction.code}`]),
    ]);
    expect(listed.has(undefined as never), 'an interaction or operation without a known route').toBe(false);
    const served = registeredRoutes(service.server!)
      .filter((route) => (route.url === '/api/fhir' || route.url.startsWith('/api/fhir/')) && route.method !== 'OPTIONS')
      .map((route) => `${route.method} ${route.url.slice('/api/fhir'.length) || '/'}`);
    for (const route of listed) expect(served, route).toContain(route);
    expect(served.filter((route) => !listed.has(route) && !PARTS.includes(route))).toEqual([]);
  });
});
