// FHIR validation (src/patients/fhir/validate.ts) of elements named after what every object inherits: the
// validator looks elements up in ordinary objects, and so took `constructor`, `toString` or `valueOf`
// for known elements (issue 20, item 8). Each served resource type, each member of Object.prototype,
// at the top, in a complex element and in an element of an array.
import { beforeAll, describe, expect, it } from 'vitest';
import { FHIR_RESOURCE_TYPES, type FhirResourceType } from '../../src/patients/events.ts';
import { loadFhirDefinitions, validationIssues } from '../../src/patients/fhir/validate.ts';

/** The smallest valid resource of each type. */
const MINIMAL: Record<FhirResourceType, Record<string, unknown>> = {
  Patient: { resourceType: 'Patient' },
  CarePlan: { resourceType: 'CarePlan', status: 'active', intent: 'plan', subject: { reference: 'Patient/p1' } },
  Observation: { resourceType: 'Observation', status: 'final', code: { text: 'weight' } },
  DiagnosticReport: { resourceType: 'DiagnosticReport', status: 'final', code: { text: 'panel' } },
  MedicationRequest: { resourceType: 'MedicationRequest', status: 'active', intent: 'order', medicationCodeableConcept: { text: 'drug' }, subject: { reference: 'Patient/p1' } },
};

/** Every property of Object.prototype; `__proto__` by name (--disable-proto=delete removed it). */
const INHERITED = [...new Set(['__proto__', ...Object.getOwnPropertyNames(Object.prototype)])];

/** `{ [name]: value }` as an own property, `__proto__` included. */
const holding = (name: string, value: unknown) => Object.defineProperty({}, name, { value, enumerable: true });

beforeAll(async () => {
  await loadFhirDefinitions();
}, 60_000);

describe('FHIR validation', () => {
  it.each(FHIR_RESOURCE_TYPES)('refuses, in a %s, elements named after every Object.prototype member, at any depth, as it refuses foo', (resourceType) => {
    const minimal = MINIMAL[resourceType];
    expect(validationIssues(minimal)).toEqual([]);
    for (const name of [...INHERITED, 'foo']) {
      const placements: [Record<string, unknown>, string][] = [
        [{ ...minimal, ...holding(name, { x: 1 }) }, `${resourceType}.${name}`],
        [{ ...minimal, meta: { versionId: '1', ...holding(name, 'x') } }, `${resourceType}.meta.${name}`],
        [{ ...minimal, identifier: [{ value: 'a' }, { value: 'b', ...holding(name, 1) }] }, `${resourceType}.identifier[1].${name}`],
      ];
      for (const [resource, expression] of placements) {
        expect(validationIssues(resource), expression).toEqual(
          expect.arrayContaining([expect.objectContaining({ severity: 'error', details: { text: `Invalid additional property "${name}"` }, expression: [expression] })]),
        );
      }
    }
  });
});
