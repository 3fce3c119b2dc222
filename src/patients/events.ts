// Events of patients (src/patients/patient.ts), their e-mail claims (src/patients/email-claim.ts),
// their clinical FHIR resources (src/patients/clinical-resource.ts) and cohort uploads
// (src/patients/cohort.ts). Also what the events' content means to both sides: the FHIR resource types, the
// content a resource's events seal (contentOf) and where it belongs (sealContext).
//
// No event holds personal or health data in clear: `sealed` is the FHIR resource (without id and
// meta) sealed under the patient's data key (src/crypto/personal-data.ts), so erasing the key erases
// it from every copy of the log. E-mails appear only as their keyed blind index.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

/** AES-256-GCM ciphertext under a person's data key: `v1.<iv>.<tag>.<ciphertext>`. */
const sealed = z.string().max(2_000_000);
/** Keyed blind index (HMAC-SHA256, base64url) of an e-mail address, or null for a patient without one. */
const emailIndex = z.string().max(64);
const id = z.string().max(64);

export const CLINICAL_RESOURCE_TYPES = ['CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest'] as const;
export type ClinicalResourceType = (typeof CLINICAL_RESOURCE_TYPES)[number];

/** The FHIR resource types whose versions these events are: a Patient, or a clinical resource of one. */
export const FHIR_RESOURCE_TYPES = ['Patient', ...CLINICAL_RESOURCE_TYPES] as const;
export type FhirResourceType = (typeof FHIR_RESOURCE_TYPES)[number];

export function isFhirResourceType(type: string): type is FhirResourceType {
  return (FHIR_RESOURCE_TYPES as readonly string[]).includes(type);
}

// Resources arrive validated against the R4 StructureDefinitions; reading them loosely is safe.
export type FhirJson = Record<string, any>;

/** The identifier system of a cohort row's externalId, in the Patient a cohort upload writes. */
export const EXTERNAL_ID_SYSTEM = 'urn:employer-integrations:external-id';

const patientFields = z.object({
  patientId: id,
  emailIndex: emailIndex.nullable(),
  sealed,
  /** The cohort upload that registered or updated the patient; null through FHIR. */
  cohortId: id.nullable(),
});
const patientRegistered = eventSchema('PatientRegistered', patientFields);
const patientUpdated = eventSchema('PatientUpdated', patientFields);
/** The patient's data key is destroyed: every `sealed` of this patient and its resources is unreadable. */
const patientErased = eventSchema('PatientErased', z.object({ patientId: id, erasedAt: z.string().max(40) }));

const patientEmailClaimed = eventSchema('PatientEmailClaimed', z.object({ emailIndex, patientId: id }));
const patientEmailReleased = eventSchema('PatientEmailReleased', z.object({ emailIndex, patientId: id }));

/** A clinical resource of one patient, sealed under that patient's data key. */
const clinicalResource = z.object({ resourceType: z.enum(CLINICAL_RESOURCE_TYPES), resourceId: id, patientId: id, sealed });
const clinicalResourceCreated = eventSchema('ClinicalResourceCreated', clinicalResource);
const clinicalResourceUpdated = eventSchema('ClinicalResourceUpdated', clinicalResource);
/** A FHIR delete: the resource's last version is a deletion (reads answer 410, earlier versions stay readable). */
const clinicalResourceDeleted = eventSchema('ClinicalResourceDeleted', clinicalResource.omit({ sealed: true }));

const cohortUploaded = eventSchema('CohortUploaded', z.object({
  cohortId: id,
  received: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
}));

const patientStreamEvents = [patientRegistered, patientUpdated, patientErased] as const;
const emailClaimEvents = [patientEmailClaimed, patientEmailReleased] as const;
const clinicalResourceEvents = [clinicalResourceCreated, clinicalResourceUpdated, clinicalResourceDeleted] as const;
export const patientEvents = [...patientStreamEvents, ...emailClaimEvents, ...clinicalResourceEvents, cohortUploaded] as const;

export type PatientEvent = EventOf<(typeof patientStreamEvents)[number]>;
export type EmailClaimEvent = EventOf<(typeof emailClaimEvents)[number]>;
export type ClinicalResourceEvent = EventOf<(typeof clinicalResourceEvents)[number]>;
export type CohortUploaded = EventOf<typeof cohortUploaded>;

/** What a resource's events seal: the parts of it the client owns, everything but its type, id and meta. */
export function contentOf(resource: FhirJson): FhirJson {
  const { resourceType: _type, id: _id, meta: _meta, ...content } = resource;
  return content;
}

/** Where a sealed resource belongs: the associated data it is sealed with, so it opens nowhere else. */
export const sealContext = (employerId: string, resourceType: string, resourceId: string) => `${employerId}/${resourceType}/${resourceId}`;
