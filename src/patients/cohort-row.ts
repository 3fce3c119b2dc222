// A cohort row (one patient of an upload) and the FHIR Patient it stands for. The way back (a Patient's
// cohort-row fields, as the roster shows them) is read in Postgres: projections/patients/queries.ts.
import { z } from 'zod';
import { EXTERNAL_ID_SYSTEM, type FhirJson } from './events.ts';

export const MAX_COHORT_ROWS = 10_000;
/** 10,000 rows of generous size fit; beyond, 413 names this limit. */
export const COHORT_BODY_LIMIT_BYTES = 8 * 1024 * 1024;

const isoDate = z.string().max(10).regex(/^\d{4}-\d{2}-\d{2}$/, 'a date YYYY-MM-DD').refine((value) => !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) && new Date(`${value}T00:00:00Z`).toISOString().startsWith(value), 'not a calendar date');
const name = z.string().trim().min(1).max(100);

export const cohortRow = z
  .strictObject({
    email: z.string().trim().max(254).pipe(z.email()).transform((email) => email.toLowerCase()),
    firstName: name,
    lastName: name,
    birthDate: isoDate.optional(),
    externalId: z.string().trim().min(1).max(100).optional(),
    phone: z.string().trim().min(3).max(40).regex(/^[+0-9 ()./-]+$/, 'digits, spaces and + ( ) . / - only').optional(),
  })
  .meta({ id: 'CohortPatient', description: 'One patient of a cohort upload. The e-mail (case-insensitive) identifies the patient within the employer.' });
export type CohortRow = z.infer<typeof cohortRow>;

/**
 * The Patient a row describes: the fields of the row replace the matching parts of `existing` (name,
 * e-mail and phone telecom, birth date, the external id), everything else of it is kept. Equal input
 * gives equal output, so an unchanged row is recognised by comparing the two.
 */
export function patientFromRow(row: CohortRow, existing: FhirJson = { resourceType: 'Patient' }): FhirJson {
  const { id: _id, meta: _meta, ...kept } = existing;
  const otherTelecom = (kept.telecom ?? []).filter((t: FhirJson) => t.system !== 'email' && t.system !== 'phone');
  const otherIdentifiers = (kept.identifier ?? []).filter((i: FhirJson) => i.system !== EXTERNAL_ID_SYSTEM);
  const identifier = [...otherIdentifiers, ...(row.externalId ? [{ system: EXTERNAL_ID_SYSTEM, value: row.externalId }] : [])];
  const patient: FhirJson = {
    ...kept,
    resourceType: 'Patient',
    name: [{ family: row.lastName, given: [row.firstName] }],
    telecom: [{ system: 'email', value: row.email }, ...(row.phone ? [{ system: 'phone', value: row.phone }] : []), ...otherTelecom],
  };
  if (identifier.length > 0) patient.identifier = identifier;
  else delete patient.identifier;
  if (row.birthDate) patient.birthDate = row.birthDate;
  return patient;
}
