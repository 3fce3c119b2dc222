// The search parameters of each FHIR resource type, as data (in the manner of Medplum's
// SearchParameter table): a name, a FHIR type, the expression it indexes and a function giving the
// values. The one list drives this read model (projection.ts writes one fhir_search_values row per
// value), the SQL of searches (search.ts) and the CapabilityStatement (src/patients/fhir/metadata.ts).
// `_id` and `_lastUpdated` are columns of fhir_resources and apply to every type.
import type { FhirJson, FhirResourceType } from '../../src/patients/events.ts';

export type SearchParamType = 'string' | 'token' | 'date' | 'reference';

export type SearchParameter = {
  name: string;
  type: SearchParamType;
  /** FHIRPath of the indexed elements, as the CapabilityStatement documents it. */
  expression: string;
  documentation: string;
  /** The raw values of a resource (normalised by `indexValues` for their type). */
  values: (resource: FhirJson) => string[];
  /** Indexed and compared as the keyed blind index (personal data never in clear in an index). */
  blindIndex?: boolean;
};

const list = (value: unknown): any[] => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value]);
const strings = (...values: unknown[]): string[] => values.flatMap(list).filter((value): value is string => typeof value === 'string' && value !== '');
/** Tokens of CodeableConcepts, Codings or Identifiers: `code` and `system|code`. */
const tokens = (items: unknown): string[] =>
  list(items).flatMap((item: FhirJson) => {
    if (item.coding) return tokens(item.coding);
    const code = item.code ?? item.value;
    if (typeof code !== 'string') return [];
    return item.system ? [code, `${item.system}|${code}`] : [code];
  });
const reference = (item: FhirJson | undefined) => strings(item?.reference);
const status: SearchParameter = { name: 'status', type: 'token', expression: 'status', documentation: 'The status code', values: (r) => strings(r.status) };
const subject = (type: string): SearchParameter[] => [
  { name: 'subject', type: 'reference', expression: `${type}.subject`, documentation: 'The patient: Patient/<id>', values: (r) => reference(r.subject) },
  { name: 'patient', type: 'reference', expression: `${type}.subject.where(resolve() is Patient)`, documentation: 'The patient: Patient/<id>', values: (r) => reference(r.subject) },
];

export const SEARCH_PARAMETERS: Record<FhirResourceType, SearchParameter[]> = {
  Patient: [
    { name: 'email', type: 'token', expression: "Patient.telecom.where(system='email')", documentation: 'E-mail address, case-insensitive (matched by a keyed blind index)', blindIndex: true, values: (r) => patientEmails(r) },
    { name: 'identifier', type: 'token', expression: 'Patient.identifier', documentation: 'A patient identifier: value or system|value', values: (r) => tokens(r.identifier) },
    { name: 'name', type: 'string', expression: 'Patient.name', documentation: 'Starts a part of a name (family, given, prefix, suffix, text), case-insensitive', values: (r) => list(r.name).flatMap((n: FhirJson) => strings(n.family, n.given, n.prefix, n.suffix, n.text)) },
    { name: 'family', type: 'string', expression: 'Patient.name.family', documentation: 'Starts the family name, case-insensitive', values: (r) => list(r.name).flatMap((n: FhirJson) => strings(n.family)) },
    { name: 'given', type: 'string', expression: 'Patient.name.given', documentation: 'Starts a given name, case-insensitive', values: (r) => list(r.name).flatMap((n: FhirJson) => strings(n.given)) },
    { name: 'birthdate', type: 'date', expression: 'Patient.birthDate', documentation: "The patient's date of birth", values: (r) => strings(r.birthDate) },
  ],
  CarePlan: [
    ...subject('CarePlan'),
    status,
    { name: 'category', type: 'token', expression: 'CarePlan.category', documentation: 'Type of plan', values: (r) => tokens(r.category) },
    { name: 'date', type: 'date', expression: 'CarePlan.period', documentation: 'Start of the period the plan covers', values: (r) => strings(r.period?.start) },
  ],
  Observation: [
    ...subject('Observation'),
    status,
    { name: 'code', type: 'token', expression: 'Observation.code', documentation: 'The code of the observation', values: (r) => tokens(r.code) },
    { name: 'category', type: 'token', expression: 'Observation.category', documentation: 'The classification of the observation', values: (r) => tokens(r.category) },
    { name: 'date', type: 'date', expression: 'Observation.effective', documentation: 'Clinically relevant time', values: (r) => strings(r.effectiveDateTime, r.effectiveInstant, r.effectivePeriod?.start) },
  ],
  DiagnosticReport: [
    ...subject('DiagnosticReport'),
    status,
    { name: 'code', type: 'token', expression: 'DiagnosticReport.code', documentation: 'The code of the report', values: (r) => tokens(r.code) },
    { name: 'category', type: 'token', expression: 'DiagnosticReport.category', documentation: 'Which diagnostic discipline produced the report', values: (r) => tokens(r.category) },
    { name: 'date', type: 'date', expression: 'DiagnosticReport.effective', documentation: 'Clinically relevant time', values: (r) => strings(r.effectiveDateTime, r.effectivePeriod?.start) },
  ],
  MedicationRequest: [
    ...subject('MedicationRequest'),
    status,
    { name: 'code', type: 'token', expression: 'MedicationRequest.medication.as(CodeableConcept)', documentation: 'The medication code', values: (r) => tokens(r.medicationCodeableConcept) },
    { name: 'category', type: 'token', expression: 'MedicationRequest.category', documentation: 'Type of medication usage', values: (r) => tokens(r.category) },
    { name: 'date', type: 'date', expression: 'MedicationRequest.authoredOn', documentation: 'When the request was written', values: (r) => strings(r.authoredOn) },
  ],
};

/** The e-mail addresses of a Patient (telecom with system email), as given. */
export function patientEmails(patient: FhirJson): string[] {
  return list(patient.telecom).filter((t: FhirJson) => t.system === 'email').flatMap((t: FhirJson) => strings(t.value));
}

/** How a value is stored in, and compared against, the index: strings ignore case, e-mails are blind. */
export function normaliseValue(parameter: SearchParameter, value: string, blindIndex: (email: string) => string): string {
  if (parameter.blindIndex) return blindIndex(value);
  return parameter.type === 'string' ? value.toLowerCase() : value;
}

/** The LIKE pattern of a string search (starts with, case-insensitive as stored); LIKE's own wildcards in the value are escaped. */
export const startsWithPattern = (value: string) => `${value.toLowerCase().replace(/[\\%_]/g, '\\$&')}%`;

/** Every (param, value) row a resource puts in fhir_search_values. */
export function indexValues(resourceType: FhirResourceType, resource: FhirJson, blindIndex: (email: string) => string): { param: string; value: string }[] {
  const rows = new Map<string, { param: string; value: string }>();
  for (const parameter of SEARCH_PARAMETERS[resourceType]) {
    for (const value of parameter.values(resource)) {
      const stored = normaliseValue(parameter, value, blindIndex);
      rows.set(`${parameter.name}\n${stored}`, { param: parameter.name, value: stored });
    }
  }
  return [...rows.values()];
}
