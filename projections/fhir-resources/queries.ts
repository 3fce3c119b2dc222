// Reads of the fhir-resources read model other than searches (search.ts): a resource by id, Patients
// by e-mail; and the shape of the resources it keeps.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { FhirJson } from '../../src/patients/events.ts';

/** The resource as the read model keeps it and the API serves it: the content, with id and meta. */
export function withMeta(resourceType: string, id: string, versionId: number, lastUpdated: string, content: FhirJson): FhirJson {
  return { resourceType, id, meta: { versionId: String(versionId), lastUpdated }, ...content };
}

const resourceRow = z.object({ resource: z.record(z.string(), z.unknown()).nullable(), erased: z.boolean(), deleted: z.boolean(), patient_id: z.string().nullable() });

/** The current version of a resource of the employer (null: none; `erased`: its patient's data was erased; `deleted`: a FHIR delete). */
export async function findResource(db: CommonQueryMethods, employerId: string, resourceType: string, id: string) {
  const row = await db.maybeOne(sql.type(resourceRow)`
    SELECT resource, erased, deleted, patient_id FROM fhir_resources WHERE employer_id = ${employerId} AND resource_type = ${resourceType} AND id = ${id}`);
  return row && { resource: row.resource as FhirJson | null, erased: row.erased, deleted: row.deleted, patientId: row.patient_id };
}

const patientRow = z.object({ id: z.string(), version_id: z.number(), resource: z.record(z.string(), z.unknown()) });

/**
 * The live (not erased) Patients with these e-mail blind indexes, by index: id, version and resource.
 * Two single-table look-ups by `= ANY` on their indexes, not a join: right after a large upload the
 * tables have no statistics yet, and the planner, expecting one row, chose a nested loop over both
 * (16 s for 2,000 rows).
 */
export async function patientsByEmailIndex(db: CommonQueryMethods, employerId: string, indexes: readonly string[]) {
  const matches = await db.any(sql.type(z.object({ resource_id: z.string(), value: z.string() }))`
    SELECT resource_id, value FROM fhir_search_values
    WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND param = 'email' AND value = ANY(${sql.array(indexes, 'text')})`);
  const rows = await db.any(sql.type(patientRow)`
    SELECT id, version_id, resource FROM fhir_resources
    WHERE employer_id = ${employerId} AND resource_type = 'Patient' AND id = ANY(${sql.array(matches.map((m) => m.resource_id), 'text')}) AND NOT erased`);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return new Map(matches.flatMap((match) => (byId.has(match.resource_id) ? [[match.value, byId.get(match.resource_id)!] as const] : [])));
}

/** The id of the live Patient with this e-mail blind index, or null (one query, for a PATIENT session's compartment). */
export async function livePatientWithEmail(db: CommonQueryMethods, employerId: string, emailIndex: string): Promise<string | null> {
  return db.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT r.id FROM fhir_search_values v
    JOIN fhir_resources r ON r.employer_id = v.employer_id AND r.resource_type = v.resource_type AND r.id = v.resource_id AND NOT r.erased
    WHERE v.employer_id = ${employerId} AND v.resource_type = 'Patient' AND v.param = 'email' AND v.value = ${emailIndex}
    LIMIT 1`);
}
