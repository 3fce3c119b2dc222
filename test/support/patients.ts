// Real patients of an employer for tests outside the patients capability: one cohort upload through
// the employer API (POST /api/employer/upload-cohort), then the new patients' ids from the roster.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { apiClient } from '../webhooks/helpers.ts';
import type { TestService } from './service.ts';

/** Uploads `count` new patients as one cohort of the tenant (an admin session); returns the cohort and the patients' ids. */
export async function addPatients(service: TestService, tenant: { cookie: string }, count: number): Promise<{ cohortId: string; patientIds: string[] }> {
  const api = apiClient(service, tenant);
  const batch = randomUUID();
  const emails = Array.from({ length: count }, (_, index) => `patient.${batch}.${index}@example.test`);
  const upload = await api.post('/api/employer/upload-cohort', { patients: emails.map((email, index) => ({ email, firstName: `First${index}`, lastName: 'Patient' })) });
  expect(upload).toMatchObject({ status: 201, body: { created: count } });
  const roster = await api.get('/api/employer/patients?limit=200');
  const byEmail = new Map((roster.body.patients as { id: string; email: string }[]).map((patient) => [patient.email, patient.id]));
  const patientIds = emails.map((email) => byEmail.get(email)!);
  expect(patientIds.every(Boolean)).toBe(true);
  return { cohortId: upload.body.cohortId, patientIds };
}

/** One new patient of the tenant (a cohort of one); returns its id. */
export async function addPatient(service: TestService, tenant: { cookie: string }): Promise<string> {
  return (await addPatients(service, tenant, 1)).patientIds[0]!;
}
