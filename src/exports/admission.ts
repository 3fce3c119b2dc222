// Whether an employer may start another export (CSV or FHIR Bulk Data), decided in the kick-off's
// transaction under the employer's admission lock, so parallel kick-offs cannot pass together:
// - work in flight: EXPORT_CSV_MAX_IN_FLIGHT CSV exports pending or running, one Bulk Data export;
// - storage: the employer's stored files (not yet expired) under EXPORT_STORAGE_QUOTA_MB.
// A refusal is 429 TOO_MANY_EXPORTS_IN_FLIGHT or 409 EXPORT_QUOTA_EXCEEDED (OperationOutcome
// `throttled` / `too-costly` on FHIR routes), with Retry-After, and changes nothing.
import type { CommonQueryMethods } from 'slonik';
import type { Config } from '../config.ts';
import { DomainError } from '../event-store/decider.ts';
import { lockAdmissions, tooManyInFlight } from '../worker/admission.ts';
import { exportsInFlight, storedExportFiles, type ExportKind } from './store.ts';

const MB = 1024 * 1024;
/** What a client refused for exports in flight is told to wait. */
const IN_FLIGHT_RETRY_AFTER_SECONDS = 10;

/** The limits as the OpenAPI descriptions state them. */
export function exportLimitsDescription(config: Config): string {
  return `An employer may have ${config.EXPORT_CSV_MAX_IN_FLIGHT} CSV exports (EXPORT_CSV_MAX_IN_FLIGHT) and one FHIR Bulk Data export pending or running at once; ` +
    'another is 429 TOO_MANY_EXPORTS_IN_FLIGHT with Retry-After. Its stored export files (those not yet expired) may hold ' +
    `${config.EXPORT_STORAGE_QUOTA_MB} MB (EXPORT_STORAGE_QUOTA_MB); past that a new export is 409 EXPORT_QUOTA_EXCEEDED with usedBytes, quotaBytes and ` +
    'nextExpiry (when the next stored files expire and free their space; Retry-After says the same). Nothing is started when refused.';
}

/** Throws the refusal when the employer may not start an export of `kind` now. Call in the transaction that then starts it. */
export async function assertExportAdmitted(tx: CommonQueryMethods, config: Config, employerId: string, kind: ExportKind): Promise<void> {
  await lockAdmissions(tx, employerId, 'export');
  const limit = kind === 'csv' ? config.EXPORT_CSV_MAX_IN_FLIGHT : 1;
  if ((await exportsInFlight(tx, employerId, kind)) >= limit) {
    throw tooManyInFlight('TOO_MANY_EXPORTS_IN_FLIGHT', kind === 'csv' ? 'CSV exports pending or running' : 'FHIR Bulk Data exports pending or running', limit, IN_FLIGHT_RETRY_AFTER_SECONDS);
  }
  const quotaBytes = Math.floor(config.EXPORT_STORAGE_QUOTA_MB * MB);
  const stored = await storedExportFiles(tx, employerId);
  if (stored.bytes >= quotaBytes) {
    const waitSeconds = stored.nextExpiry === null ? null : Math.max(1, Math.ceil((Date.parse(stored.nextExpiry) - Date.now()) / 1000));
    throw new DomainError(
      'conflict',
      'EXPORT_QUOTA_EXCEEDED',
      `The employer's stored export files hold ${(stored.bytes / MB).toFixed(1)} MB of its ${config.EXPORT_STORAGE_QUOTA_MB} MB; ` +
        (stored.nextExpiry === null ? 'no stored files expire yet.' : `the next files expire at ${stored.nextExpiry}.`) +
        ' Deleting a FHIR Bulk Data export (DELETE on its status URL) frees its files at once.',
      { usedBytes: stored.bytes, quotaBytes, nextExpiry: stored.nextExpiry, ...(waitSeconds === null ? {} : { retryAfterSeconds: waitSeconds }) },
    );
  }
}
