// Queries of the cohort list and the patient roster (cursor-paged, newest first, scoped by employer),
// and the platform workflows' patient directory.
// The roster reads the Patient rows of the fhir-resources read model, shown as cohort rows.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { pageOf, type Keyset } from '../../src/http/page.ts';
import { EXTERNAL_ID_SYSTEM } from '../../src/patients/events.ts';
import { startsWithPattern } from '../fhir-resources/search-parameters.ts';

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

const rosterRow = z.object({
  id: z.string(), email: z.string().nullable(), first_name: z.string().nullable(), last_name: z.string().nullable(), birth_date: z.string().nullable(),
  external_id: z.string().nullable(), phone: z.string().nullable(), created_iso: z.string(), updated_iso: z.string(), cursor_at: z.string(),
});

/**
 * A Patient as the roster shows it (the cohort row's fields, the inverse of patientFromRow): the first
 * e-mail, the first name's family and first given, the birth date, the identifier of EXTERNAL_ID_SYSTEM
 * (else the first identifier), the first phone. Taken out in Postgres, so a roster read (and every
 * export) parses a few strings a row rather than the whole resource; timestamps as ISO 8601 text (named
 * apart from the columns: ORDER BY created_at must sort by the column, not by this text).
 */
const rosterColumns = sql.fragment`id,
  lower(jsonb_path_query_first(resource, '$.telecom[*] ? (@.system == "email" && @.value != "").value') #>> '{}') AS email,
  resource #>> '{name,0,given,0}' AS first_name, resource #>> '{name,0,family}' AS last_name, resource ->> 'birthDate' AS birth_date,
  coalesce(jsonb_path_query_first(resource, ${`$.identifier[*] ? (@.system == "${EXTERNAL_ID_SYSTEM}")`}::jsonpath), resource #> '{identifier,0}') ->> 'value' AS external_id,
  jsonb_path_query_first(resource, '$.telecom[*] ? (@.system == "phone")') ->> 'value' AS phone,
  to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_iso,
  to_char(last_updated AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_iso`;

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

/** The roster's order, newest first: for the columns of rosterPageQuery (its page and what is built on it). */
export const ROSTER_ORDER = sql.fragment`created_at DESC, id DESC`;

/**
 * One page of the roster, newest first: the roster's columns, with `created_at` and `cursor_at` for the
 * keyset after it. A query to run, or to build on: exports format its rows in Postgres.
 */
export function rosterPageQuery(employerId: string, { limit, after, search }: { limit: number; after: Keyset | null; search?: RosterSearch | undefined }) {
  return sql.fragment`
    SELECT ${rosterColumns}, created_at, created_at::text AS cursor_at FROM fhir_resources r
    WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND NOT erased
      ${after ? sql.fragment`AND (created_at, id) < (${after.at}::timestamptz, ${after.id})` : sql.fragment``}
      ${search ? rosterSearchCondition(search) : sql.fragment``}
    ORDER BY ${ROSTER_ORDER} LIMIT ${limit}`;
}

export async function listRoster(pool: CommonQueryMethods, employerId: string, { limit, after, search }: { limit: number; after: Keyset | null; search?: RosterSearch }) {
  const rows = await pool.any(sql.type(rosterRow)`
    SELECT id, email, first_name, last_name, birth_date, external_id, phone, created_iso, updated_iso, cursor_at
    FROM (${rosterPageQuery(employerId, { limit: limit + 1, after, search })}) page ORDER BY ${ROSTER_ORDER}`);
  const { page, next } = pageOf(rows, limit, (row) => ({ at: row.cursor_at, id: row.id }));
  return {
    patients: page.map((row) => ({
      id: row.id,
      email: row.email,
      firstName: row.first_name,
      lastName: row.last_name,
      birthDate: row.birth_date,
      externalId: row.external_id,
      phone: row.phone,
      createdAt: row.created_iso,
      updatedAt: row.updated_iso,
    })),
    next,
  };
}

/**
 * The patients of an employer as the platform workflows check and count them: a request about a
 * patient of another employer (or none) is refused, and a simulation counts the members it projects
 * costs for.
 */
export type PatientDirectory = {
  /** The patient exists, belongs to this employer and is not erased. */
  exists(employerId: string, patientId: string): Promise<boolean>;
  /** The employer's active patients, or those of one of its cohorts. */
  countActive(employerId: string, cohortId?: string | null): Promise<number>;
};

/**
 * The PatientDirectory over the read models: a patient is the employer's non-erased Patient in
 * fhir_resources; a cohort's patients are its `cohort_members` (an erasure removes the patient from them).
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
