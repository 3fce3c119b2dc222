// Reads of one resource from the fhir-resources read model (searches are src/fhir/search.ts).
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { FhirJson } from '../../src/fhir/search-parameters.ts';

const resourceRow = z.object({ resource: z.record(z.string(), z.unknown()).nullable(), erased: z.boolean(), patient_id: z.string().nullable() });

/** The current version of a resource of the employer (null: none; `erased`: its patient's data was erased). */
export async function findResource(db: CommonQueryMethods, employerId: string, resourceType: string, id: string) {
  const row = await db.maybeOne(sql.type(resourceRow)`
    SELECT resource, erased, patient_id FROM fhir_resources WHERE employer_id = ${employerId} AND resource_type = ${resourceType} AND id = ${id}`);
  return row && { resource: row.resource as FhirJson | null, erased: row.erased, patientId: row.patient_id };
}
