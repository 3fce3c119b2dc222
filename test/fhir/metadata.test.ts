// GET /api/fhir/metadata (src/patients/fhir/metadata.ts): the CapabilityStatement, driven by fhir-kit-client,
// says exactly what is served: each interaction, search parameter, _include/_revinclude value and
// operation it lists is answered, as the other test files show; here, that they are listed.
import { describe, expect, it } from 'vitest';
import { client, base, responseOf, expectValid } from './fhir-api.ts';

describe('metadata', () => {
  it('is a valid R4 CapabilityStatement with every type, its interactions and search parameters, and an ETag', async () => {
    const statement = expectValid(await client.capabilityStatement());
    expect(statement).toMatchObject({ resourceType: 'CapabilityStatement', status: 'active', kind: 'instance', fhirVersion: '4.0.1' });
    expect(statement.format).toContain('application/fhir+json');
    expect(statement.implementation.url).toBe(base);
    const types = statement.rest[0].resource.map((resource: any) => resource.type);
    expect(types).toEqual(['Patient', 'CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest', 'Group']);
    const patient = statement.rest[0].resource[0];
    expect(patient.interaction.map((i: any) => i.code)).toEqual(['search-type', 'read', 'vread', 'create', 'update']);
    expect(patient).toMatchObject({ versioning: 'versioned', readHistory: true, conditionalCreate: true, conditionalRead: 'not-match', updateCreate: false });
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
});
