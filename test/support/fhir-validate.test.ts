// The shared FHIR body check (fhir-validate.ts): valid R4 passes both validators, 4.0.1 included;
// what either validator refuses fails.
import { describe, expect, it } from 'vitest';
import { fhirValidationErrors } from './fhir-validate.ts';

describe('fhirValidationErrors', () => {
  it('passes valid R4, a CapabilityStatement of FHIR 4.0.1 included', () => {
    expect(fhirValidationErrors({ resourceType: 'Patient', id: 'p1', name: [{ family: 'Lovelace' }], birthDate: '1815-12-10' })).toEqual([]);
    const statement = { resourceType: 'CapabilityStatement', status: 'active', date: '2026-11-25', kind: 'instance', fhirVersion: '4.0.1', format: ['json'], implementation: { description: 'test' }, rest: [{ mode: 'server' }] };
    expect(fhirValidationErrors(statement)).toEqual([]);
    expect(fhirValidationErrors({ resourceType: 'Bundle', type: 'searchset', total: 1, entry: [{ fullUrl: 'https://x.test/Patient/p1', resource: { resourceType: 'Patient', id: 'p1' }, search: { mode: 'match' } }] })).toEqual([]);
  });

  it('fails an unknown element, a malformed date, an unknown fhirVersion and an invalid resource inside a Bundle', () => {
    expect(fhirValidationErrors({ resourceType: 'Patient', shoeSize: 42 })).not.toEqual([]);
    expect(fhirValidationErrors({ resourceType: 'Patient', birthDate: 'yesterday' })).not.toEqual([]);
    expect(fhirValidationErrors({ resourceType: 'CapabilityStatement', status: 'active', date: '2026-11-25', kind: 'instance', fhirVersion: '4.0.9', format: ['json'], implementation: { description: 'test' }, rest: [{ mode: 'server' }] })).not.toEqual([]);
    expect(fhirValidationErrors({ resourceType: 'Bundle', type: 'searchset', entry: [{ resource: { resourceType: 'Patient', birthDate: 'yesterday' } }] })).not.toEqual([]);
  });
});
