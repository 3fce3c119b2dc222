// Patient/{id}/$everything on the fhir-resources read model: the Patient and every live resource of
// its compartment (patient_id), optionally of some types and changed after an instant, the Patient
// first and then by type and id, keyset-paged (the cursor is the last entry's rank, type and id).
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { DomainError } from '../../src/event-store/decider.ts';
import type { FhirJson, FhirResourceType } from '../../src/patients/events.ts';

export type EverythingRequest = {
  patientId: string;
  types: FhirResourceType[];
  /** Only resources last updated after this instant (ISO). */
  since: string | null;
  count: number;
  cursor: EverythingCursor | null;
};
type EverythingCursor = { rank: number; type: string; id: string };

export function encodeEverythingCursor(cursor: EverythingCursor): string {
  return Buffer.from(JSON.stringify([cursor.rank, cursor.type, cursor.id])).toString('base64url');
}

export function decodeEverythingCursor(text: string): EverythingCursor {
  try {
    const [rank, type, id] = z.tuple([z.union([z.literal(0), z.literal(1)]), z.string().max(64), z.string().max(64)]).parse(JSON.parse(Buffer.from(text, 'base64url').toString('utf8')));
    return { rank, type, id };
  } catch {
    throw new DomainError('invalid', 'INVALID_SEARCH', '_cursor is not one this server returned in a next link.');
  }
}

const row = z.object({ rank: z.number(), resource_type: z.string(), id: z.string(), resource: z.record(z.string(), z.unknown()) });

export async function patientEverything(db: CommonQueryMethods, employerId: string, request: EverythingRequest) {
  // The Patient's own row has patient_id = its id, as every resource of its compartment.
  const rank = sql.fragment`(CASE WHEN r.resource_type = 'Patient' THEN 0 ELSE 1 END)`;
  const where = sql.join(
    [
      sql.fragment`r.employer_id = ${employerId}`,
      sql.fragment`r.patient_id = ${request.patientId}`,
      sql.fragment`NOT r.erased`,
      sql.fragment`NOT r.deleted`,
      sql.fragment`r.resource_type = ANY(${sql.array(request.types, 'text')})`,
      ...(request.since === null ? [] : [sql.fragment`r.last_updated > ${request.since}::timestamptz`]),
    ],
    sql.fragment` AND `,
  );
  const total = await db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM fhir_resources r WHERE ${where}`);
  const after = request.cursor ? sql.fragment`AND (${rank}, r.resource_type, r.id) > (${request.cursor.rank}, ${request.cursor.type}, ${request.cursor.id})` : sql.fragment``;
  const rows = request.count === 0 ? [] : [...(await db.any(sql.type(row)`
    SELECT ${rank} AS rank, r.resource_type, r.id, r.resource FROM fhir_resources r
    WHERE ${where} ${after} ORDER BY ${rank}, r.resource_type, r.id LIMIT ${request.count + 1}`))];
  const page = rows.slice(0, request.count);
  const last = page[page.length - 1];
  return {
    total,
    resources: page.map((entry) => entry.resource as FhirJson),
    next: rows.length > request.count && last ? { rank: last.rank, type: last.resource_type, id: last.id } : null,
  };
}
