// History on the fhir-resources read model: a page of versions (fhir_resource_versions, no content) of
// one resource or of every resource of a type, newest first, keyset-paged on (last_updated, id,
// version_id). The versions' content is in their events (src/patients/fhir/history.ts opens it).
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { DomainError } from '../../src/event-store/decider.ts';

/** Each entry opens its event: a page is bounded lower than a search's. */
export const HISTORY_MAX_COUNT = 100;
export const HISTORY_DEFAULT_COUNT = 20;

type HistoryCursor = { at: string; id: string; version: number };

export type HistoryRequest = {
  resourceType: string;
  /** One resource's history; every resource of the type without it. */
  id?: string;
  /** Only versions written at or after this instant. */
  since?: string;
  count: number;
  cursor: HistoryCursor | null;
  /** Conditions on the version rows (alias r), such as a compartment's. */
  conditions: FragmentSqlToken[];
};

const versionRow = z.object({ id: z.string(), version_id: z.number(), at: z.string(), patient_id: z.string() });
export type VersionRow = { id: string; versionId: number; patientId: string };

export async function historyPage(db: CommonQueryMethods, employerId: string, request: HistoryRequest): Promise<{ total: number; versions: VersionRow[]; next: HistoryCursor | null }> {
  const where = sql.join([
    sql.fragment`r.employer_id = ${employerId}`,
    sql.fragment`r.resource_type = ${request.resourceType}`,
    ...(request.id === undefined ? [] : [sql.fragment`r.id = ${request.id}`]),
    ...(request.since === undefined ? [] : [sql.fragment`r.last_updated >= ${request.since}::timestamptz`]),
    ...request.conditions,
  ], sql.fragment` AND `);
  const total = await db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM fhir_resource_versions r WHERE ${where}`);
  if (request.count === 0 || total === 0) return { total, versions: [], next: null };
  const after = request.cursor
    ? sql.fragment`AND (r.last_updated, r.id, r.version_id) < (${request.cursor.at}::timestamptz, ${request.cursor.id}, ${request.cursor.version})`
    : sql.fragment``;
  const rows = await db.any(sql.type(versionRow)`
    SELECT r.id, r.version_id, r.last_updated::text AS at, r.patient_id
    FROM fhir_resource_versions r WHERE ${where} ${after}
    ORDER BY r.last_updated DESC, r.id DESC, r.version_id DESC LIMIT ${request.count + 1}`);
  const page = rows.slice(0, request.count);
  const last = page[page.length - 1]!;
  return {
    total,
    versions: page.map((row) => ({ id: row.id, versionId: row.version_id, patientId: row.patient_id })),
    next: rows.length > request.count ? { at: last.at, id: last.id, version: last.version_id } : null,
  };
}

export function encodeHistoryCursor(cursor: HistoryCursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.id, cursor.version])).toString('base64url');
}

export function decodeHistoryCursor(text: string): HistoryCursor {
  try {
    const [at, id, version] = z.tuple([z.string().max(64), z.string().max(64), z.number().int().min(1)]).parse(JSON.parse(Buffer.from(text, 'base64url').toString('utf8')));
    return { at, id, version };
  } catch {
    throw new DomainError('invalid', 'INVALID_SEARCH', '_cursor is not one this server returned in a next link.');
  }
}
