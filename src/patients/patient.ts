// The patient aggregate (stream `tenant-<employerId>.patient-<patientId>`): a member of an employer's
// plan, whose FHIR Patient resource is sealed under the patient's own data key. Its version (FHIR
// meta.versionId, the ETag) is the number of resource versions written. And the e-mail claim
// (`tenant-<employerId>.patientEmail-<blind index>`): one patient per e-mail in an employer, held by a
// stream appended to together with the patient's events, not by a read model that lags.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { emailUnavailable } from '../tenants/email-reservation.ts';
import type { EmailClaimEvent, PatientEvent } from './events.ts';

export type PatientState = { status: 'absent' | 'active' | 'erased'; emailIndex: string | null; version: number };

type Version = { patientId: string; emailIndex: string | null; sealed: string; cohortId: string | null };
export type PatientCommand =
  | ({ type: 'RegisterPatient' } & Version)
  /** `expectedVersion`: the If-Match of a FHIR update (412 when the patient moved on). */
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

export type EmailClaimState = { holder: string | null };
export type EmailClaimCommand = { type: 'ClaimEmail' | 'ReleaseEmail'; emailIndex: string; patientId: string };

export const emailClaimDecider: Decider<EmailClaimCommand, EmailClaimEvent, EmailClaimState> = {
  initialState: () => ({ holder: null }),
  evolve: (_state, event) => ({ holder: event.type === 'PatientEmailClaimed' ? event.data.patientId : null }),
  decide(command, state) {
    const data = { emailIndex: command.emailIndex, patientId: command.patientId };
    if (command.type === 'ReleaseEmail') return state.holder === command.patientId ? [{ type: 'PatientEmailReleased', data }] : [];
    if (state.holder === command.patientId) return [];
    // The same answer as for an address in another employer's domain (src/tenants/email-reservation.ts).
    if (state.holder !== null) throw emailUnavailable();
    return [{ type: 'PatientEmailClaimed', data }];
  },
};
