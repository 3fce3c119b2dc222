// Reads of one resource from the fhir-resources read model (searches are search.ts), and the shape of
// the resources it keeps.
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { FhirJson } from '../../src/patients/events.ts';

/** The resource as the read model keeps it and the API serves it: the content, with id and meta. */
export function withMeta(resourceType: string, id: string, versionId: number, lastUpdated: string, content: FhirJson): FhirJson {
  return { resourceType, id, meta: { versionId: String(versionId), lastUpdated }, ...content };
}

const resourceRow = z.object({ resource: z.record(z.string(), z.unknown()).nullable(), erased: z.boolean(), patient_id: z.string().nullable() });

/** The current version of a resource of the employer (null: none; `erased`: its patient's data was erased). */
export async function findResource(db: CommonQueryMethods, employerId: string, resourceType: string, id: string) {
  const row = await db.maybeOne(sql.type(resourceRow)`
    SELECT resource, erased, patient_id FROM fhir_resources WHERE employer_id = ${employerId} AND resource_type = ${resourceType} AND id = ${id}`);
  return row && { resource: row.resource as FhirJson | null, erased: row.erased, patientId: row.patient_id };
}
