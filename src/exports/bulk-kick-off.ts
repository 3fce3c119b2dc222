// The kick-off parameters of a FHIR Bulk Data export (Bulk Data Access IG 2.0), from the query and a
// Parameters body together (clients send either): _type, _since, _outputFormat, patient (Patient and
// Group level), _typeFilter (the search parameters of /metadata, parsed here to refuse what the run
// could not) and _elements (the keys kept of each type, computed here where the R4 definitions are
// loaded). What cannot be honoured is 400, or with `Prefer: handling=lenient` ignored and listed for
// the manifest's `error` file.
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { instantMillis, INSTANT_RANGE_MESSAGE } from '../http/instant.ts';
import { FHIR_RESOURCE_TYPES } from '../patients/events.ts';
import { fhirError } from '../patients/fhir/outcome.ts';
import { elementsFor, keptKeys } from '../patients/fhir/subset.ts';
import { parseSearch } from '../../projections/fhir-resources/search.ts';
import type { BulkRequest } from './bulk-data.ts';

const NDJSON_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson']);
export const kickOffQuery = z
  .object({
    _type: z.union([z.string().max(500), z.array(z.string().max(500)).max(20)]).optional().meta({ description: `Comma-separated resource types, of ${FHIR_RESOURCE_TYPES.join(', ')}; all by default.` }),
    _since: z.string().max(40).optional().meta({ description: 'Only resources last updated after this instant.' }),
    _outputFormat: z.string().max(100).optional().meta({ description: 'application/fhir+ndjson (default), application/ndjson or ndjson.' }),
    _typeFilter: z.union([z.string().max(2000), z.array(z.string().max(2000)).max(20)]).optional().meta({ description: '<Type>?<search>: only the resources of the type one of its searches matches (the search parameters of /api/fhir/metadata; no _count, _sort, _include, _elements, _summary).' }),
    _elements: z.string().max(1000).optional().meta({ description: 'Comma-separated elements (`element` for every type, `Type.element` for one): the resources keep these, id, meta and their mandatory elements, tagged SUBSETTED; a type none applies to is exported whole.' }),
  })
  .catchall(z.unknown());
export const parametersBody = z
  .object({ resourceType: z.literal('Parameters'), parameter: z.array(z.object({ name: z.string().max(100) }).catchall(z.unknown())).max(1000).optional() })
  .optional()
  .meta({ description: 'A FHIR Parameters resource with _type, _since, _outputFormat, _typeFilter, _elements (valueString / valueInstant) and patient (valueReference, Patient/<id>; at most 1000).' });
/** The kick-off parameters the IG names that this server honours. */
const KICK_OFF_PARAMETERS = new Set(['_type', '_since', '_outputFormat', '_typeFilter', '_elements', 'patient']);
/** Parameters of a search that page or shape its result: they mean nothing in a _typeFilter. */
const NOT_FILTERS = ['_count', '_sort', '_cursor', '_total', '_include', '_revinclude', '_elements', '_summary', '_format'];
export type KickOff = { query: z.infer<typeof kickOffQuery>; body: z.infer<typeof parametersBody>; level: 'system' | 'patient' | 'group'; employerId: string };

/**
 * The kick-off's parameters, from the query and a Parameters body together (clients send either).
 * What cannot be honoured is refused (400), or under `Prefer: handling=lenient` ignored and listed in
 * `ignored` (the manifest's error file).
 */
export function bulkRequestOf(ctx: AppContext, request: FastifyRequest, { query, body, level, employerId }: KickOff): Omit<BulkRequest, 'url'> {
  const values = (name: string): string[] => {
    const fromQuery = query[name];
    const fromBody = (body?.parameter ?? []).filter((p) => p.name === name).map((p) => p.valueString ?? p.valueInstant ?? p.valueCode ?? (p.valueReference as { reference?: unknown } | undefined)?.reference);
    return [...(Array.isArray(fromQuery) ? fromQuery : fromQuery === undefined ? [] : [fromQuery]), ...fromBody].map(String);
  };
  const prefer = String(request.headers.prefer ?? '');
  if (!prefer.includes('respond-async')) throw fhirError('invalid', 'A bulk export needs the header Prefer: respond-async.');
  const lenient = /\bhandling=lenient\b/.test(prefer);
  const ignored: string[] = [];
  const cannot = (message: string) => {
    if (!lenient) throw fhirError('invalid', message);
    ignored.push(message);
  };

  const names = new Set([...Object.keys(query), ...(body?.parameter ?? []).map((p) => p.name)]);
  for (const name of names) if (!KICK_OFF_PARAMETERS.has(name)) cannot(`The parameter ${name} is not supported; supported: ${[...KICK_OFF_PARAMETERS].join(', ')}.`);
  const formats = values('_outputFormat');
  const badFormat = formats.find((format) => !NDJSON_FORMATS.has(format));
  if (badFormat) throw fhirError('invalid', `_outputFormat ${badFormat} is not supported: application/fhir+ndjson only.`);
  const requested = values('_type').flatMap((types) => types.split(',')).map((type) => type.trim()).filter(Boolean);
  const unsupported = requested.filter((type) => !(FHIR_RESOURCE_TYPES as readonly string[]).includes(type));
  if (unsupported.length > 0) cannot(`_type ${unsupported.join(', ')} is not supported; the types exported are ${FHIR_RESOURCE_TYPES.join(', ')}.`);
  const since = values('_since')[0] ?? null;
  if (since !== null && instantMillis(since) === undefined) throw fhirError('invalid', `_since must be a FHIR instant (e.g. 2026-01-02T03:04:05Z), ${INSTANT_RANGE_MESSAGE}; got ${since}.`);
  const known = requested.filter((type) => !unsupported.includes(type));
  const types = known.length > 0 ? FHIR_RESOURCE_TYPES.filter((type) => known.includes(type)) : [...FHIR_RESOURCE_TYPES];

  const patients = values('patient').flatMap((reference) => {
    const id = /^(?:.*\/)?Patient\/([A-Za-z0-9.-]{1,64})$/.exec(reference)?.[1];
    if (id === undefined) cannot(`patient ${reference} is not a reference to a Patient (Patient/<id>).`);
    return id === undefined ? [] : [id];
  });
  if (patients.length > 0 && level === 'system') cannot('patient applies to Patient- and Group-level exports only.');

  const typeFilters: NonNullable<BulkRequest['typeFilters']> = [];
  for (const filter of values('_typeFilter')) {
    const [type, search = ''] = filter.split('?', 2);
    const exported = types.find((candidate) => candidate === type);
    const parameters = [...new URLSearchParams(search).entries()];
    const notFilter = parameters.find(([name]) => NOT_FILTERS.includes(name.split(':')[0]!));
    if (exported === undefined) cannot(`_typeFilter ${filter}: ${type} is not among the types exported (${types.join(', ')}).`);
    else if (parameters.length === 0 || notFilter) cannot(`_typeFilter ${filter}: a _typeFilter is a search of its type's parameters (see /metadata)${notFilter ? `, not ${notFilter[0]}` : ''}.`);
    else {
      try {
        // Parsed here to refuse what the run could not; the run parses it again into SQL.
        parseSearch(exported, Object.fromEntries(parameters), { employerId, encryptionKey: ctx.encryptionKey });
        typeFilters.push({ type: exported, search });
      } catch (error) {
        cannot(`_typeFilter ${filter}: ${(error as Error).message}`);
      }
    }
  }

  const elementNames = values('_elements').flatMap((list) => list.split(',')).map((name) => name.trim()).filter(Boolean);
  const elements = Object.fromEntries(
    types.flatMap((type) => {
      const asked = elementsFor(type, elementNames).elements;
      return asked.length === 0 ? [] : [[type, keptKeys(type, asked)]];
    }),
  );
  for (const name of elementNames) {
    if (!types.some((type) => elementsFor(type, [name]).elements.length > 0)) cannot(`_elements ${name} is no element of the types exported (${types.join(', ')}).`);
  }

  return { types, since, ...(patients.length > 0 && level !== 'system' ? { patients } : {}), typeFilters, elements, ignored };
}
