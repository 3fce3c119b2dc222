// _elements and _summary (FHIR R4 search 3.1.1.5.9 and 3.1.1.5.8), on search, read and Bulk Data: a
// resource cut down to the elements asked for, or to its summary elements (isSummary in its
// StructureDefinition; `text`, or all but text, for _summary=text and data), always with id, meta and
// its mandatory elements (so it stays valid), and marked SUBSETTED in meta.tag. What each type's
// elements are comes from the R4 definitions the validator indexed (validate.ts).
import { getDataType } from '@medplum/core';
import { z } from 'zod';
import type { FhirJson, FhirResourceType } from '../events.ts';
import { fhirError } from './outcome.ts';

export const SUBSETTED_TAG = { system: 'http://terminology.hl7.org/CodeSystem/v3-ObservationValue', code: 'SUBSETTED', display: 'subsetted' };

/** Element names of a type as a resource spells them without their choice suffix (`effective` for effective[x]). */
export function elementNames(resourceType: FhirResourceType): Set<string> {
  return new Set(Object.keys(getDataType(resourceType).elements).map((path) => path.replace(/\[x\]$/, '')));
}

/** Kept whatever is asked: what identifies the resource and what makes it valid. */
function alwaysKept(resourceType: FhirResourceType): string[] {
  return ['resourceType', 'id', 'meta', ...(getDataType(resourceType).mandatoryProperties ?? [])];
}

/**
 * The elements of `resourceType` an `_elements` list names (each `element` or `Type.element`; another
 * type's are skipped), and the names it does not have.
 */
export function elementsFor(resourceType: FhirResourceType, values: string[]): { elements: string[]; unknown: string[] } {
  const names = elementNames(resourceType);
  const ofType = values.flatMap((value) => {
    const [type, element] = value.includes('.') ? value.split('.', 2) : [resourceType, value];
    return type === resourceType ? [{ value, element: element! }] : [];
  });
  return { elements: ofType.filter(({ element }) => names.has(element)).map(({ element }) => element), unknown: ofType.filter(({ element }) => !names.has(element)).map(({ value }) => value) };
}

/**
 * The JSON keys a subset keeps: of the elements asked for (`_elements`) or the summary elements, with
 * what is always kept; a choice element as each of its types (`effectiveDateTime`, `effectivePeriod`),
 * and each primitive's extension (`_birthDate`).
 */
export function keptKeys(resourceType: FhirResourceType, asked: string[] | 'summary'): string[] {
  const schema = getDataType(resourceType);
  const chosen = asked === 'summary' ? [...(schema.summaryProperties ?? [])] : asked;
  const elements = new Set([...alwaysKept(resourceType), ...chosen]);
  const keys = [...elements].flatMap((name) => {
    const choice = schema.elements[`${name}[x]`];
    return choice ? choice.type.map(({ code }) => `${name}${code[0]!.toUpperCase()}${code.slice(1)}`) : [name];
  });
  return [...keys, ...keys.map((key) => `_${key}`)];
}

/** `resource` with only the `keys` (keptKeys), tagged SUBSETTED. */
export function subset(resource: FhirJson, keys: string[]): FhirJson {
  const keep = new Set(keys);
  const cut = Object.fromEntries(Object.entries(resource).filter(([key]) => keep.has(key)));
  const meta = (resource.meta ?? {}) as FhirJson;
  return { ...cut, meta: { ...meta, tag: [...(meta.tag ?? []), SUBSETTED_TAG] } };
}

export const SUMMARY_VALUES = ['true', 'false', 'text', 'data', 'count'] as const;
export type Summary = (typeof SUMMARY_VALUES)[number];

/** The query parameters of a subset, on search and read. */
export const subsetQuery = {
  _elements: z.string().max(1000).optional().meta({ description: 'Comma-separated elements to return (with id, meta and the mandatory ones); the resources are tagged SUBSETTED.' }),
  _summary: z.enum(SUMMARY_VALUES).optional().meta({ description: 'true: the summary elements; text: text, id, meta and the mandatory elements; data: all but text; count (search only): the total only; false: everything. Subsets are tagged SUBSETTED.' }),
};

/** The keys of the subset a request asks for (null: the whole resource). `count` is the search's to honour. */
export function requestedSubset(resourceType: FhirResourceType, query: { _elements?: string | undefined; _summary?: Summary | undefined }): string[] | null {
  if (query._elements !== undefined && query._summary !== undefined && query._summary !== 'false') throw fhirError('invalid', '_elements and _summary cannot be used together.');
  if (query._elements !== undefined) {
    const { elements, unknown } = elementsFor(resourceType, query._elements.split(',').map((name) => name.trim()).filter(Boolean));
    if (unknown.length > 0) throw fhirError('invalid', `_elements: ${resourceType} has no element ${unknown.join(', ')}.`);
    return keptKeys(resourceType, elements);
  }
  switch (query._summary) {
    case 'true':
      return keptKeys(resourceType, 'summary');
    case 'text':
      return keptKeys(resourceType, ['text']);
    case 'data':
      return keptKeys(resourceType, [...elementNames(resourceType)].filter((name) => name !== 'text'));
    default:
      return null;
  }
}
