// FHIR search on the fhir-resources read model: parses the search parameters of a request (unknown
// ones are 400 `invalid`), turns each into a condition on fhir_search_values (or on a column, for _id
// and _lastUpdated) and pages by keyset on (last_updated, id). All paging state travels in the next and
// previous links' query strings (`_cursor`), so a client re-issues them against the type's URL; page
// 500 costs what page 1 costs.
import type { KeyObject } from 'node:crypto';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { emailBlindIndex } from '../../src/crypto/personal-data.ts';
import { DomainError } from '../../src/event-store/decider.ts';
import { EARLIEST_INSTANT_MS, END_OF_INSTANTS_MS, instantMillis, utcMillis } from '../../src/http/instant.ts';
import type { FhirJson, FhirResourceType } from '../../src/patients/events.ts';
import { prototypeNameIn, prototypeNameMessage } from '../../src/http/prototypes.ts';
import { normaliseValue, SEARCH_PARAMETERS, startsWithPattern, type SearchParameter } from './search-parameters.ts';

export const DEFAULT_COUNT = 20;
export const MAX_COUNT = 1000;

/** Parameters that page the result rather than filter it. `_format` is content negotiation. */
const RESULT_PARAMETERS = new Set(['_count', '_sort', '_cursor', '_format', '_total']);
/** Parameters that add to or cut down the result (the route applies _elements and _summary); carried by the links. */
const SHAPING_PARAMETERS = new Set(['_include', '_include:iterate', '_revinclude', '_revinclude:iterate', '_elements', '_summary']);
/** At most this many resources are included (_include, _revinclude) with one page. */
export const MAX_INCLUDED = 1000;
const DATE_PREFIXES = ['eq', 'gt', 'ge', 'lt', 'le'] as const;
type DatePrefix = (typeof DATE_PREFIXES)[number];

/** A search this read model cannot answer as asked: FHIR's 400 `invalid` (an OperationOutcome at the route). */
const invalidSearch = (message: string) => new DomainError('invalid', 'INVALID_SEARCH', message);

type Condition = FragmentSqlToken;
type Cursor = { direction: 'next' | 'previous'; at: string; id: string };

/** A reference search parameter followed from the matches: `Observation:subject` (include) or, searching Patients, to them (revinclude). */
export type Inclusion = { direction: 'include' | 'revinclude'; sourceType: FhirResourceType; parameter: string };

export type SearchRequest = {
  resourceType: FhirResourceType;
  conditions: Condition[];
  /** The parameters as given but the paging ones, for the links. */
  filters: [string, string][];
  inclusions: Inclusion[];
  count: number;
  descending: boolean;
  cursor: Cursor | null;
};

/** Query parameters as fastify parses them: a repeated parameter is an array (AND of its occurrences). */
export type QueryParameters = Record<string, string | string[] | undefined>;

export function parseSearch(resourceType: FhirResourceType, query: QueryParameters, context: { employerId: string; encryptionKey: KeyObject }): SearchRequest {
  const entries = Object.entries(query).flatMap(([name, value]) => (value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((v) => [name, v] as [string, string])));
  const single = (name: string) => {
    const values = entries.filter(([n]) => n === name).map(([, v]) => v);
    if (values.length > 1) throw invalidSearch(`${name} may be given once.`);
    return values[0];
  };
  const countText = single('_count');
  const count = countText === undefined ? DEFAULT_COUNT : Number(countText);
  if (!Number.isInteger(count) || count < 0) throw invalidSearch(`_count must be a whole number from 0 to ${MAX_COUNT}.`);
  const sort = single('_sort') ?? '_lastUpdated';
  if (sort !== '_lastUpdated' && sort !== '-_lastUpdated') throw invalidSearch('_sort supports _lastUpdated and -_lastUpdated.');
  const cursorText = single('_cursor');
  const total = single('_total');
  if (total !== undefined && !['none', 'estimate', 'accurate'].includes(total)) throw invalidSearch('_total is none, estimate or accurate.');

  const summary = single('_summary');

  const parameters = new Map(SEARCH_PARAMETERS[resourceType].map((parameter) => [parameter.name, parameter]));
  const filters = entries.filter(([name]) => !RESULT_PARAMETERS.has(name));
  const inclusions = filters.filter(([name]) => name.startsWith('_include') || name.startsWith('_revinclude')).map(([name, value]) => parseInclusion(resourceType, name, value));
  const conditions = filters.filter(([name]) => !SHAPING_PARAMETERS.has(name)).map(([name, value]) => {
    // Names come from the query string and from If-None-Exist; the lookups below are a Map and a Set.
    const prototypeName = prototypeNameIn(name);
    if (prototypeName !== undefined) throw invalidSearch(prototypeNameMessage(prototypeName));
    if (name.includes(':')) throw invalidSearch(`Search modifiers are not supported (${name}).`);
    const values = splitValues(value);
    if (values.length === 0 || values.length > 100) throw invalidSearch(`${name} needs 1 to 100 comma-separated values.`);
    if (name === '_id') return sql.fragment`r.id = ANY(${sql.array(values, 'text')})`;
    if (name === '_lastUpdated') return or(values.map((v) => lastUpdatedCondition(v)));
    const parameter = parameters.get(name);
    if (!parameter) {
      const known = ['_id', '_lastUpdated', ...parameters.keys()].join(', ');
      throw invalidSearch(`Unknown search parameter ${name} for ${resourceType}. Supported: ${known}, and _count, _sort.`);
    }
    return valueCondition(parameter, values, (email) => emailBlindIndex(context.encryptionKey, context.employerId, email));
  });
  return { resourceType, conditions, filters, inclusions, count: summary === 'count' ? 0 : Math.min(count, MAX_COUNT), descending: sort.startsWith('-'), cursor: cursorText === undefined ? null : decodeSearchCursor(cursorText) };
}

/** The reference parameters of each type (`Observation:subject`), each with the type it points to. */
export function referenceParameters(sourceType: FhirResourceType): { name: string; target: FhirResourceType }[] {
  return SEARCH_PARAMETERS[sourceType].filter((parameter) => parameter.type === 'reference').map(({ name }) => ({ name, target: 'Patient' as const }));
}

/** The _include values a search of `resourceType` takes (`Observation:subject`). */
export const includeValues = (resourceType: FhirResourceType) => referenceParameters(resourceType).map(({ name }) => `${resourceType}:${name}`);

/** The _revinclude values a search of `resourceType` takes: the reference parameters of every type that point to it. */
export const revIncludeValues = (resourceType: FhirResourceType) =>
  (Object.keys(SEARCH_PARAMETERS) as FhirResourceType[]).flatMap((sourceType) => referenceParameters(sourceType).filter(({ target }) => target === resourceType).map(({ name }) => `${sourceType}:${name}`));

/** `_include=Observation:subject[:Patient]` or `_revinclude=...`; `:iterate` follows nothing further here (every reference points to a Patient). */
function parseInclusion(resourceType: FhirResourceType, name: string, value: string): Inclusion {
  const direction = name.startsWith('_revinclude') ? 'revinclude' : 'include';
  const [sourceType, parameter, target] = value.split(':');
  const allowed = direction === 'include' ? includeValues(resourceType) : revIncludeValues(resourceType);
  const known = allowed.includes(`${sourceType}:${parameter}`) && (target === undefined || target === 'Patient');
  if (!known) throw invalidSearch(`_${direction}=${value} is not supported for ${resourceType}; supported: ${allowed.join(', ') || 'none'}.`);
  return { direction, sourceType: sourceType as FhirResourceType, parameter: parameter! };
}

/** Comma separates alternatives (OR); `\,` is a literal comma. */
function splitValues(value: string): string[] {
  return value.split(/(?<!\\),/).map((v) => v.replace(/\\,/g, ',')).filter((v) => v !== '');
}

const or = (conditions: Condition[]) => sql.fragment`(${sql.join(conditions, sql.fragment` OR `)})`;

function valueCondition(parameter: SearchParameter, values: string[], blindIndex: (email: string) => string): Condition {
  const matches = (test: Condition) => sql.fragment`EXISTS (SELECT 1 FROM fhir_search_values s
    WHERE s.employer_id = r.employer_id AND s.resource_type = r.resource_type AND s.resource_id = r.id AND s.param = ${parameter.name} AND ${test})`;
  switch (parameter.type) {
    case 'string':
      return matches(or(values.map((v) => sql.fragment`s.value LIKE ${startsWithPattern(v)}`)));
    case 'token':
      // `|code` is a code without a system: matched as the bare code.
      return matches(sql.fragment`s.value = ANY(${sql.array(values.map((v) => normaliseValue(parameter, v.startsWith('|') ? v.slice(1) : v, blindIndex)), 'text')})`);
    case 'reference':
      return matches(sql.fragment`s.value = ANY(${sql.array(values.map((v) => (v.includes('/') ? v.replace(/^.*\/(Patient\/[^/]+)$/, '$1') : `Patient/${v}`)), 'text')})`);
    case 'date':
      return matches(or(values.map((v) => dateCondition(v))));
  }
}

/** A date search value: its prefix, the date as written, and the instants it spans. */
type DateValue = { prefix: DatePrefix; date: string; start: number; end: number };

/** YYYY[-MM[-DD[Thh:mm[:ss[.fff]][zone]]]] */
const FHIR_DATE = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/;

/**
 * Reads a date search value: 400 unless it is a calendar date whose span lies within the instants
 * Postgres and Date agree on (src/http/instant.ts): `_lastUpdated=0000` names no year.
 */
function dateValue(value: string): DateValue {
  const prefix = DATE_PREFIXES.find((p) => value.startsWith(p)) ?? 'eq';
  const date = value.startsWith(prefix) ? value.slice(2) : value;
  const refused = () => invalidSearch(`${value} is not a FHIR date search value (optional prefix eq, gt, ge, lt, le, then YYYY[-MM[-DD[Thh:mm[:ss][zone]]]], a calendar date from year 0001 to 9999).`);
  const [, year, month, day, hour, , second, fraction, zone] = FHIR_DATE.exec(date) ?? [];
  if (year === undefined) throw refused();
  // A time without a zone is UTC.
  const start = hour === undefined ? utcMillis(Number(year), Number(month ?? 1), Number(day ?? 1)) : instantMillis(`${date.slice(0, 16)}:${second ?? '00'}${fraction ?? ''}${zone ?? 'Z'}`);
  if (start === undefined || start < EARLIEST_INSTANT_MS) throw refused();
  // The span is the precision written: a year, month, day, minute, second, or the fraction's last digit.
  const end = new Date(start);
  if (month === undefined) end.setUTCFullYear(end.getUTCFullYear() + 1);
  else if (day === undefined) end.setUTCMonth(end.getUTCMonth() + 1);
  else if (hour === undefined) end.setUTCDate(end.getUTCDate() + 1);
  else end.setTime(start + (fraction ? Math.max(1, 10 ** (4 - fraction.length)) : second ? 1000 : 60_000));
  if (end.getTime() > END_OF_INSTANTS_MS) throw refused();
  return { prefix, date, start, end: end.getTime() };
}

/**
 * Dates are indexed as their ISO text, so comparisons are on text: a partial date stands for every
 * later-precision value it starts (`le1980` takes all of 1980: `~` sorts after every ISO character).
 */
function dateCondition(value: string): Condition {
  const { prefix, date } = dateValue(value);
  switch (prefix) {
    case 'eq':
      return sql.fragment`s.value LIKE ${`${date}%`}`;
    case 'gt':
      return sql.fragment`s.value > ${`${date}~`}`;
    case 'ge':
      return sql.fragment`s.value >= ${date}`;
    case 'lt':
      return sql.fragment`s.value < ${date}`;
    case 'le':
      return sql.fragment`s.value <= ${`${date}~`}`;
  }
}

/** _lastUpdated is a timestamp column: a partial date is the range it spans. */
function lastUpdatedCondition(value: string): Condition {
  const { prefix, start: startMs, end: endMs } = dateValue(value);
  const start = new Date(startMs).toISOString();
  // The end of year 9999 is no ISO instant (toISOString writes +010000); nothing stored is after it.
  const end = endMs === END_OF_INSTANTS_MS ? 'infinity' : new Date(endMs).toISOString();
  switch (prefix) {
    case 'eq':
      return sql.fragment`(r.last_updated >= ${start}::timestamptz AND r.last_updated < ${end}::timestamptz)`;
    case 'gt':
      return sql.fragment`r.last_updated >= ${end}::timestamptz`;
    case 'ge':
      return sql.fragment`r.last_updated >= ${start}::timestamptz`;
    case 'lt':
      return sql.fragment`r.last_updated < ${start}::timestamptz`;
    case 'le':
      return sql.fragment`r.last_updated < ${end}::timestamptz`;
  }
}

export function encodeSearchCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.direction === 'next' ? 'n' : 'p', cursor.at, cursor.id])).toString('base64url');
}

function decodeSearchCursor(text: string): Cursor {
  try {
    const [direction, at, id] = z.tuple([z.enum(['n', 'p']), z.string().max(64), z.string().max(64)]).parse(JSON.parse(Buffer.from(text, 'base64url').toString('utf8')));
    if (instantMillis(at) === undefined) throw new Error('bad time');
    return { direction: direction === 'n' ? 'next' : 'previous', at, id };
  } catch {
    throw invalidSearch('_cursor is not one this server returned in a next or previous link.');
  }
}

const resultRow = z.object({ id: z.string(), resource: z.record(z.string(), z.unknown()), at: z.string() });

export type SearchResult = {
  total: number;
  resources: FhirJson[];
  /** Cursors of the pages either side, null where there is none. */
  next: Cursor | null;
  previous: Cursor | null;
};

export async function runSearch(db: CommonQueryMethods, employerId: string, request: SearchRequest): Promise<SearchResult> {
  const where = sql.join(
    [sql.fragment`r.employer_id = ${employerId}`, sql.fragment`r.resource_type = ${request.resourceType}`, sql.fragment`NOT r.erased`, sql.fragment`NOT r.deleted`, ...request.conditions],
    sql.fragment` AND `,
  );
  const total = await db.oneFirst(sql.type(z.object({ count: z.number() }))`SELECT count(*)::int AS count FROM fhir_resources r WHERE ${where}`);
  if (request.count === 0 || total === 0) return { total, resources: [], next: null, previous: null };

  // Reading backwards (a previous link) runs the opposite order, then turns the page around.
  const backwards = request.cursor?.direction === 'previous';
  const descending = request.descending !== backwards;
  const after = request.cursor
    ? descending
      ? sql.fragment`AND (r.last_updated, r.id) < (${request.cursor.at}::timestamptz, ${request.cursor.id})`
      : sql.fragment`AND (r.last_updated, r.id) > (${request.cursor.at}::timestamptz, ${request.cursor.id})`
    : sql.fragment``;
  const order = descending ? sql.fragment`r.last_updated DESC, r.id DESC` : sql.fragment`r.last_updated, r.id`;
  const rows = [...(await db.any(sql.type(resultRow)`
    SELECT r.id, r.resource, r.last_updated::text AS at FROM fhir_resources r
    WHERE ${where} ${after} ORDER BY ${order} LIMIT ${request.count + 1}`))];
  const more = rows.length > request.count;
  const page = rows.slice(0, request.count);
  if (backwards) page.reverse();
  if (page.length === 0) return { total, resources: [], next: null, previous: null };
  const first = page[0]!;
  const last = page[page.length - 1]!;
  const hasNext = backwards ? request.cursor !== null : more;
  const hasPrevious = backwards ? more : request.cursor !== null;
  return {
    total,
    resources: page.map((row) => row.resource as FhirJson),
    next: hasNext ? { direction: 'next', at: last.at, id: last.id } : null,
    previous: hasPrevious ? { direction: 'previous', at: first.at, id: first.id } : null,
  };
}

/**
 * The resources _include and _revinclude add to a page of `matches`: live, of the employer, under the
 * same `restrictions` (a PATIENT session's compartment), none of the matches, each once; at most
 * MAX_INCLUDED, oldest first.
 */
export async function runInclusions(db: CommonQueryMethods, employerId: string, request: SearchRequest, matches: FhirJson[], restrictions: Condition[]): Promise<FhirJson[]> {
  if (request.inclusions.length === 0 || matches.length === 0) return [];
  const ids = matches.map((resource) => String(resource.id));
  const followed = request.inclusions.map(({ direction, sourceType, parameter }) =>
    direction === 'include'
      ? sql.fragment`(r.resource_type = 'Patient' AND 'Patient/' || r.id IN (SELECT s.value FROM fhir_search_values s
          WHERE s.employer_id = ${employerId} AND s.resource_type = ${sourceType} AND s.param = ${parameter} AND s.resource_id = ANY(${sql.array(ids, 'text')})))`
      : sql.fragment`(r.resource_type = ${sourceType} AND EXISTS (SELECT 1 FROM fhir_search_values s
          WHERE s.employer_id = r.employer_id AND s.resource_type = r.resource_type AND s.resource_id = r.id AND s.param = ${parameter}
            AND s.value = ANY(${sql.array(ids.map((id) => `${request.resourceType}/${id}`), 'text')})))`,
  );
  const notMatched = sql.fragment`NOT (r.resource_type = ${request.resourceType} AND r.id = ANY(${sql.array(ids, 'text')}))`;
  const rows = await db.any(sql.type(resultRow)`
    SELECT r.id, r.resource, r.last_updated::text AS at FROM fhir_resources r
    WHERE ${sql.join([sql.fragment`r.employer_id = ${employerId}`, sql.fragment`NOT r.erased`, sql.fragment`NOT r.deleted`, notMatched, or(followed), ...restrictions], sql.fragment` AND `)}
    ORDER BY r.last_updated, r.resource_type, r.id LIMIT ${MAX_INCLUDED}`);
  return rows.map((row) => row.resource as FhirJson);
}