// Queries of the cohort list and the patient roster (cursor-paged, newest first, scoped by employer),
// and the platform workflows' patient directory.
// The roster reads the Patient rows of the fhir-resources read model, shown as cohort rows.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { pageOf, type Keyset } from '../../src/http/page.ts';
import { startsWithPattern, type FhirJson } from '../../src/fhir/search-parameters.ts';
import { cohortRowOf } from '../../src/patients/cohort-row.ts';
import type { PatientDirectory } from '../../src/workflows/patient-directory.ts';

export const cohortSummary = z
  .object({
    cohortId: z.string(),
    received: z.number().int(),
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    uploadedAt: z.string(),
  })
  .meta({ id: 'CohortSummary' });
export type CohortSummary = z.infer<typeof cohortSummary>;

const cohortRow = z.object({
  cohort_id: z.string(), received: z.number(), created: z.number(), updated: z.number(), unchanged: z.number(), uploaded_at: z.string(), cursor_at: z.string(),
});
const toSummary = (row: z.infer<typeof cohortRow>): CohortSummary => ({
  cohortId: row.cohort_id, received: row.received, created: row.created, updated: row.updated, unchanged: row.unchanged, uploadedAt: row.uploaded_at,
});

export async function listCohorts(pool: CommonQueryMethods, employerId: string, { limit, after }: { limit: number; after: Keyset | null }) {
  const rows = await pool.any(sql.type(cohortRow)`
    SELECT cohort_id, received, created, updated, unchanged, uploaded_at, uploaded_at::text AS cursor_at FROM cohorts
    WHERE employer_id = ${employerId} ${after ? sql.fragment`AND (uploaded_at, cohort_id) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
    ORDER BY uploaded_at DESC, cohort_id DESC LIMIT ${limit + 1}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.cohort_id }));
  return { cohorts: page.map(toSummary), next };
}

export async function getCohort(pool: CommonQueryMethods, employerId: string, cohortId: string): Promise<CohortSummary | null> {
  const row = await pool.maybeOne(sql.type(cohortRow)`
    SELECT cohort_id, received, created, updated, unchanged, uploaded_at, uploaded_at::text AS cursor_at FROM cohorts
    WHERE employer_id = ${employerId} AND cohort_id = ${cohortId}`);
  return row && toSummary(row);
}

export const rosterPatient = z
  .object({
    id: z.string().meta({ description: 'The FHIR Patient id' }),
    email: z.string().nullable(),
    firstName: z.string().nullable(),
    lastName: z.string().nullable(),
    birthDate: z.string().nullable(),
    externalId: z.string().nullable(),
    phone: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'RosterPatient' });

const patientRow = z.object({ id: z.string(), resource: z.record(z.string(), z.unknown()), created_at: z.string(), last_updated: z.string(), cursor_at: z.string() });

/** A roster search: an e-mail's blind index (exact), or the start of a first or last name. */
export type RosterSearch = { emailIndex: string } | { namePrefix: string };

/** The roster search as a condition on the Patient's search values (the FHIR search's own rows). */
function rosterSearchCondition(search: RosterSearch) {
  const [params, test] = 'emailIndex' in search
    ? [['email'], sql.fragment`s.value = ${search.emailIndex}`]
    : [['given', 'family'], sql.fragment`s.value LIKE ${startsWithPattern(search.namePrefix)}`];
  return sql.fragment`AND EXISTS (SELECT 1 FROM fhir_search_values s
    WHERE s.employer_id = r.employer_id AND s.resource_type = 'Patient' AND s.resource_id = r.id AND s.param = ANY(${sql.array(params, 'text')}) AND ${test})`;
}

export async function listRoster(pool: CommonQueryMethods, employerId: string, { limit, after, search }: { limit: number; after: Keyset | null; search?: RosterSearch }) {
  const rows = await pool.any(sql.type(patientRow)`
    SELECT id, resource, created_at, last_updated, created_at::text AS cursor_at FROM fhir_resources r
    WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND NOT erased
      ${after ? sql.fragment`AND (created_at, id) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
      ${search ? rosterSearchCondition(search) : sql.fragment``}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.id }));
  return {
    patients: page.map((row) => {
      const fields = cohortRowOf(row.resource as FhirJson);
      return {
        id: row.id,
        email: fields.email ?? null,
        firstName: fields.firstName ?? null,
        lastName: fields.lastName ?? null,
        birthDate: fields.birthDate ?? null,
        externalId: fields.externalId ?? null,
        phone: fields.phone ?? null,
        createdAt: row.created_at,
        updatedAt: row.last_updated,
      };
    }),
    next,
  };
}

/**
 * The platform workflows' PatientDirectory over the read models: a patient is the employer's
 * non-erased Patient in fhir_resources; a cohort's patients are its `cohort_members` (an erasure
 * removes the patient from them).
 */
export function readModelPatientDirectory(pool: CommonQueryMethods): PatientDirectory {
  return {
    async exists(employerId, patientId) {
      return pool.exists(sql.unsafe`
        SELECT 1 FROM fhir_resources WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND id = ${patientId} AND NOT erased`);
    },
    async countActive(employerId, cohortId) {
      return pool.oneFirst(cohortId
        ? sql.type(z.object({ count: z.number() }))`
            SELECT count(*)::int AS count FROM cohort_members WHERE employer_id = ${employerId} AND cohort_id = ${cohortId}`
        : sql.type(z.object({ count: z.number() }))`
            SELECT count(*)::int AS count FROM fhir_resources WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND NOT erased`);
    },
  };
}
