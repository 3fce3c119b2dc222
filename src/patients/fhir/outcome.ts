// FHIR errors (SPEC 7.2): every FHIR route answers errors as an OperationOutcome whose issue code is a
// valid IssueType, chosen from the status (or named by the error itself, e.g. the validator's issues).
import type { OperationOutcome, OperationOutcomeIssue } from '@medplum/fhirtypes';
import { z } from 'zod';
import { DomainError, type ErrorKind } from '../../event-store/decider.ts';
import { errorShape } from '../../http/errors.ts';

export const FHIR_CONTENT_TYPE = 'application/fhir+json';

type IssueType = OperationOutcomeIssue['code'];

const ISSUE_BY_STATUS: Record<number, IssueType> = {
  400: 'invalid',
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  405: 'not-supported',
  406: 'not-supported',
  409: 'duplicate',
  410: 'deleted',
  412: 'conflict',
  413: 'too-long',
  415: 'not-supported',
  422: 'processing',
  429: 'throttled',
  503: 'transient',
};

/** Service error codes whose issue type is not the status's. */
const ISSUE_BY_CODE: Record<string, IssueType> = {
  CONCURRENT_MODIFICATION: 'conflict',
  IDEMPOTENCY_KEY_IN_USE: 'conflict',
  DATABASE_UNAVAILABLE: 'transient',
  EXPORT_QUOTA_EXCEEDED: 'too-costly',
};

/** A FHIR error: its kind (the route layer makes it a status), and the issues (the validator's, or one made from the message). */
export function fhirError(kind: ErrorKind, message: string, issues?: OperationOutcomeIssue[]): DomainError {
  return new DomainError(kind, 'FHIR_ERROR', message, issues ? { issues } : {});
}

export function operationOutcome(issues: OperationOutcomeIssue[]): OperationOutcome {
  return { resourceType: 'OperationOutcome', issue: issues };
}

/** The error body of every FHIR route, as /api/openapi documents it. */
const operationOutcomeSchema = z
  .object({
    resourceType: z.literal('OperationOutcome'),
    issue: z.array(z.object({
      severity: z.enum(['fatal', 'error', 'warning', 'information']),
      code: z.string().meta({ description: 'An IssueType (https://hl7.org/fhir/R4/valueset-issue-type.html): invalid, login, forbidden, not-found, throttled, ...' }),
      diagnostics: z.string().optional(),
      expression: z.array(z.string()).optional(),
    }).catchall(z.unknown())).min(1),
  })
  .catchall(z.unknown())
  .meta({ id: 'OperationOutcome', description: 'FHIR R4 OperationOutcome (https://hl7.org/fhir/R4/operationoutcome.html): the error body of every route under /api/fhir.' });

export const fhirErrorShape = errorShape({ schema: operationOutcomeSchema, contentType: FHIR_CONTENT_TYPE }, (error) => {
  const issues = (error.details.issues as OperationOutcomeIssue[] | undefined) ?? [
    {
      // A transient outage (503) is an error the client retries; only an unexpected failure is fatal.
      severity: error.status === 500 ? 'fatal' : 'error',
      code: ISSUE_BY_CODE[error.code] ?? ISSUE_BY_STATUS[error.status] ?? (error.status >= 500 ? 'exception' : 'processing'),
      diagnostics: error.message,
    },
  ];
  return { contentType: FHIR_CONTENT_TYPE, body: operationOutcome(issues) };
});
