// Patients and FHIR: cohort upload, the roster, erasure (crypto-shredding) and the FHIR R4 API.
import { fhirResourcesProjection } from '../../projections/fhir-resources/projection.ts';
import { patientsProjection } from '../../projections/patients/projection.ts';
import type { Capability } from '../capability.ts';
import { patientAuditMappers } from './audit.ts';
import { patientEvents } from './events.ts';
import { fhirRoutes } from './fhir/routes.ts';
import { cohortRoutes } from './routes/cohorts.ts';
import { patientRoutes } from './routes/patients.ts';

export const patientsCapability: Capability = {
  name: 'patients',
  events: patientEvents,
  routes: [cohortRoutes(), patientRoutes(), fhirRoutes()],
  projections: [patientsProjection],
  keyedProjections: (encryptionKey) => [fhirResourcesProjection(encryptionKey)],
  auditMappers: patientAuditMappers,
};
