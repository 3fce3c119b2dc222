// Audit actions of patients and FHIR writes (no personal data in the details: ids and counts only).
// Patients registered or updated by a cohort upload are audited once, as the upload.
import type { AuditMappers } from '../capability.ts';

export const patientAuditMappers: AuditMappers = {
  PatientRegistered: (event) => (event.data.cohortId ? null : { action: 'fhir.create', targetType: 'Patient', targetId: String(event.data.patientId) }),
  PatientUpdated: (event) => (event.data.cohortId ? null : { action: 'fhir.update', targetType: 'Patient', targetId: String(event.data.patientId) }),
  PatientErased: (event) => ({ action: 'patient.erase', targetType: 'Patient', targetId: String(event.data.patientId) }),
  ClinicalResourceCreated: (event) => ({ action: 'fhir.create', targetType: String(event.data.resourceType), targetId: String(event.data.resourceId), details: { patientId: event.data.patientId } }),
  ClinicalResourceUpdated: (event) => ({ action: 'fhir.update', targetType: String(event.data.resourceType), targetId: String(event.data.resourceId), details: { patientId: event.data.patientId } }),
  ClinicalResourceDeleted: (event) => ({ action: 'fhir.delete', targetType: String(event.data.resourceType), targetId: String(event.data.resourceId), details: { patientId: event.data.patientId } }),
  CohortUploaded: (event) => {
    const { cohortId, received, created, updated, unchanged } = event.data;
    return { action: 'cohort.upload', targetType: 'cohort', targetId: String(cohortId), details: { received, created, updated, unchanged } };
  },
};
