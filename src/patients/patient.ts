// The patient aggregate (stream `tenant-<employerId>.patient-<patientId>`): a member of an employer's
// plan, whose FHIR Patient resource is sealed under the patient's own data key. Its version (FHIR
// meta.versionId, the ETag) is the number of resource versions written. Its e-mail is held by the
// e-mail claim (email-claim.ts).
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { PatientEvent } from './events.ts';

export type PatientState = { status: 'absent' | 'active' | 'erased'; emailIndex: string | null; version: number };

type Version = { patientId: string; emailIndex: string | null; sealed: string; cohortId: string | null };
export type PatientCommand =
  | ({ type: 'RegisterPatient' } & Version)
  /** `expectedVersion`: the If-Match of a FHIR update (`precondition_failed` when the patient moved on). */
  | ({ type: 'UpdatePatient'; expectedVersion?: number } & Version)
  | { type: 'ErasePatient'; patientId: string; erasedAt: string };

export const gone = () => new DomainError('gone', 'GONE', 'The personal data of this patient has been erased.');
export const staleVersion = (version: number) =>
  new DomainError('precondition_failed', 'PRECONDITION_FAILED', `The resource is at version ${version}; If-Match named another. Read it again and retry.`);

export const patientDecider: Decider<PatientCommand, PatientEvent, PatientState> = {
  initialState: () => ({ status: 'absent', emailIndex: null, version: 0 }),
  evolve(state, event) {
    switch (event.type) {
      case 'PatientRegistered':
      case 'PatientUpdated':
        return { status: 'active', emailIndex: event.data.emailIndex, version: state.version + 1 };
      case 'PatientErased':
        return { ...state, status: 'erased', emailIndex: null };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'RegisterPatient': {
        if (state.status !== 'absent') throw new DomainError('conflict', 'PATIENT_EXISTS', `Patient ${command.patientId} exists already.`);
        const { type: _type, ...data } = command;
        return [{ type: 'PatientRegistered', data }];
      }
      case 'UpdatePatient': {
        if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', `Patient ${command.patientId} was not found.`);
        if (state.status === 'erased') throw gone();
        if (command.expectedVersion !== undefined && command.expectedVersion !== state.version) throw staleVersion(state.version);
        const { patientId, emailIndex, sealed, cohortId } = command;
        return [{ type: 'PatientUpdated', data: { patientId, emailIndex, sealed, cohortId } }];
      }
      case 'ErasePatient':
        if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', `Patient ${command.patientId} was not found.`);
        if (state.status === 'erased') return [];
        return [{ type: 'PatientErased', data: { patientId: command.patientId, erasedAt: command.erasedAt } }];
    }
  },
};
