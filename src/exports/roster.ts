// The roster as exports read it: keyset pages of the patients read model (erased patients are never
// in it), newest first, one page in memory at a time.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { prefetchedPages, type Keyset } from '../http/page.ts';
import { listRoster, rosterPatient } from '../../projections/patients/queries.ts';

export const EXPORT_PAGE_ROWS = 1000;
export type RosterPatient = z.infer<typeof rosterPatient>;

/** The roster's pages, the next read while the caller handles the current one. */
export function rosterPages(pool: CommonQueryMethods, employerId: string, after: Keyset | null = null, rows = EXPORT_PAGE_ROWS) {
  return prefetchedPages((from) => listRoster(pool, employerId, { limit: rows, after: from }), after);
}

export async function countPatients(pool: CommonQueryMethods, employerId: string): Promise<number> {
  return pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM fhir_resources WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND NOT erased`);
}
