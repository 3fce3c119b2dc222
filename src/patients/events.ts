// Events of patients (src/patients/patient.ts), their e-mail claims (src/patients/email-claim.ts),
// their clinical FHIR resources (src/patients/clinical-resource.ts) and cohort uploads. Written as zod
// schemas of each event's data, the types inferred; `patientEvents` is what the capability registers
// with the event store's schema registry (all at version 1).
//
// No event holds personal or health data in clear: `sealed` is the FHIR resource (without id and
// meta) sealed under the patient's data key (src/crypto/personal-data.ts), so erasing the key erases
// it from every copy of the log. E-mails appear only as their keyed blind index.
import { z } from 'zod';
import type { DomainEvent } from '../event-store/decider.ts';
import { eventSchema } from '../event-store/schemas.ts';

/** AES-256-GCM ciphertext under a person's data key: `v1.<iv>.<tag>.<ciphertext>`. */
const sealed = z.string().max(2_000_000);
/** Keyed blind index (HMAC-SHA256, base64url) of an e-mail address, or null for a patient without one. */
const emailIndex = z.string().max(64);
const id = z.string().max(64);

export const CLINICAL_RESOURCE_TYPES = ['CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest'] as const;
export type ClinicalResourceType = (typeof CLINICAL_RESOURCE_TYPES)[number];

export const patientEventSchemas = {
  /** `cohortId`: registered by that cohort upload; null through FHIR. */
  PatientRegistered: z.object({ patientId: id, emailIndex: emailIndex.nullable(), sealed, cohortId: id.nullable() }),
  PatientUpdated: z.object({ patientId: id, emailIndex: emailIndex.nullable(), sealed, cohortId: id.nullable() }),
  /** The patient's data key is destroyed: every `sealed` of this patient and its resources is unreadable. */
  PatientErased: z.object({ patientId: id, erasedAt: z.string().max(40) }),
  PatientEmailClaimed: z.object({ emailIndex, patientId: id }),
  PatientEmailReleased: z.object({ emailIndex, patientId: id }),
  /** A clinical resource of one patient, sealed under that patient's data key. */
  ClinicalResourceCreated: z.object({ resourceType: z.enum(CLINICAL_RESOURCE_TYPES), resourceId: id, patientId: id, sealed }),
  ClinicalResourceUpdated: z.object({ resourceType: z.enum(CLINICAL_RESOURCE_TYPES), resourceId: id, patientId: id, sealed }),
  CohortUploaded: z.object({ cohortId: id, received: z.number().int(), created: z.number().int(), updated: z.number().int(), unchanged: z.number().int() }),
} as const;

type Schemas = typeof patientEventSchemas;
type EventFor<Type extends keyof Schemas> = DomainEvent<Type, z.infer<Schemas[Type]>>;

export type PatientRegistered = EventFor<'PatientRegistered'>;
export type PatientUpdated = EventFor<'PatientUpdated'>;
export type PatientErased = EventFor<'PatientErased'>;
export type PatientEvent = PatientRegistered | PatientUpdated | PatientErased;
export type EmailClaimEvent = EventFor<'PatientEmailClaimed'> | EventFor<'PatientEmailReleased'>;
export type ClinicalResourceEvent = EventFor<'ClinicalResourceCreated'> | EventFor<'ClinicalResourceUpdated'>;
export type CohortUploaded = EventFor<'CohortUploaded'>;
export type PatientsCapabilityEvent = PatientEvent | EmailClaimEvent | ClinicalResourceEvent | CohortUploaded;

export const PATIENT_EVENT_TYPES = Object.keys(patientEventSchemas) as (keyof Schemas)[];

export const patientEvents = Object.entries(patientEventSchemas).map(([type, data]) => eventSchema(type, data));

/** Where a sealed resource belongs: the associated data it is sealed with, so it opens nowhere else. */
export const sealContext = (employerId: string, resourceType: string, resourceId: string) => `${employerId}/${resourceType}/${resourceId}`;
