import { describe, expect, it } from 'vitest';
import { formatSmartScope, grantedScopes, parseSmartScope, serviceScopesOf, type SmartScope } from '../../src/smart-clients/scopes.ts';

const parse = (...texts: string[]) => texts.map((text) => parseSmartScope(text)!);

describe('SMART system scopes', () => {
  it('reads v2 and v1 forms over the served types, and nothing else', () => {
    expect(formatSmartScope(parseSmartScope('system/Patient.rs')!)).toBe('system/Patient.rs');
    expect(formatSmartScope(parseSmartScope('system/*.read')!)).toBe('system/*.rs');
    expect(formatSmartScope(parseSmartScope('system/*.write')!)).toBe('system/*.cud');
    expect(formatSmartScope(parseSmartScope('system/*.*')!)).toBe('system/*.cruds');
    for (const refused of ['system/Practitioner.rs', 'user/*.rs', 'patient/Patient.read', 'system/*.', 'system/*.sr', 'system/Patient.rx', 'openid']) {
      expect(parseSmartScope(refused), refused).toBeNull();
    }
  });

  it('grants the intersection of the asked and the registered', () => {
    expect(grantedScopes(parse('system/*.cruds'), parse('system/Patient.rs', 'system/Observation.cruds'))).toEqual(['system/Patient.rs', 'system/Observation.cruds']);
    expect(grantedScopes(parse('system/Patient.rs'), parse('system/*.read'))).toEqual(['system/Patient.rs']);
    expect(grantedScopes(parse('system/CarePlan.c'), parse('system/*.rs'))).toEqual([]);
  });

  it('maps onto fhir:read and fhir:write with the types each reaches', () => {
    expect(serviceScopesOf(parse('system/Patient.rs', 'system/Observation.cruds'))).toEqual({
      scopes: ['fhir:read', 'fhir:write'],
      resourceTypes: { 'fhir:read': ['Patient', 'Observation'], 'fhir:write': ['Observation'] },
    });
    expect(serviceScopesOf(parse('system/*.s') as SmartScope[])).toEqual({ scopes: ['fhir:read'], resourceTypes: { 'fhir:read': 'all' } });
  });
});
