// Patients and FHIR: cohort upload, the roster, erasure (crypto-shredding) and the FHIR R4 API.
import { fhirResourcesProjection } from '../../projections/fhir-resources/projection.ts';
import { patientsProjection } from '../../projections/patients/projection.ts';
import type { Capability } from '../capability.ts';
import { fhirRoutes } from '../fhir/routes.ts';
import { loadFhirDefinitions } from '../fhir/validate.ts';
import { patientAuditMappers } from './audit.ts';
import { patientRoutes } from './routes.ts';

export const patientsCapability: Capability = {
  name: 'patients',
  routes: [patientRoutes(), fhirRoutes()],
  projections: [patientsProjection],
  keyedProjections: (encryptionKey) => [fhirResourcesProjection(encryptionKey)],
  auditMappers: patientAuditMappers,
  // The R4 definitions are indexed once, before the first request needs them.
  setup: async () => loadFhirDefinitions(),
};
