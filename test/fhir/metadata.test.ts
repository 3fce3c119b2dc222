// GET /api/fhir/metadata (src/patients/fhir/metadata.ts): the CapabilityStatement, driven by fhir-kit-client.
import { describe, expect, it } from 'vitest';
import { client, base, responseOf, expectValid } from './fhir-api.ts';

describe('metadata', () => {
  it('is a valid R4 CapabilityStatement with every type, its interactions and search parameters, and an ETag', async () => {
    const statement = expectValid(await client.capabilityStatement());
    expect(statement).toMatchObject({ resourceType: 'CapabilityStatement', status: 'active', kind: 'instance', fhirVersion: '4.0.1' });
    expect(statement.format).toContain('application/fhir+json');
    expect(statement.implementation.url).toBe(base);
    const types = statement.rest[0].resource.map((resource: any) => resource.type);
    expect(types).toEqual(['Patient', 'CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest']);
    const patient = statement.rest[0].resource[0];
    expect(patient.interaction.map((i: any) => i.code)).toEqual(['read', 'vread', 'update', 'create', 'search-type', 'delete', 'history-instance', 'history-type']);
    expect(statement.rest[0].interaction.map((i: any) => i.code)).toEqual(['transaction', 'batch']);
    expect(patient.searchParam.map((p: any) => p.name)).toEqual(expect.arrayContaining(['email', 'identifier', 'name', 'family', 'given', 'birthdate', '_id', '_lastUpdated']));
    expect(responseOf(statement).headers.get('etag')).toMatch(/^W\/".+"$/);
    expect(responseOf(statement).headers.get('content-type')).toContain('application/fhir+json');
  });
});
