// A clinical FHIR resource (CarePlan, Observation, DiagnosticReport, MedicationRequest) of one patient:
// stream `tenant-<employerId>.<resourceType>-<id>`, its content sealed under that patient's data key.
// Whether the patient exists (and is not erased) is checked by the command on the patient's stream.
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { ClinicalResourceEvent, ClinicalResourceType } from './events.ts';
import { staleVersion } from './patient.ts';

export type ClinicalResourceState = { exists: boolean; version: number; patientId: string | null };

type Content = { resourceType: ClinicalResourceType; resourceId: string; patientId: string; sealed: string };
export type ClinicalResourceCommand = ({ type: 'CreateResource' } & Content) | ({ type: 'UpdateResource'; expectedVersion?: number } & Content);

export const clinicalResourceDecider: Decider<ClinicalResourceCommand, ClinicalResourceEvent, ClinicalResourceState> = {
  initialState: () => ({ exists: false, version: 0, patientId: null }),
  evolve: (state, event) => ({ exists: true, version: state.version + 1, patientId: event.data.patientId }),
  decide(command, state) {
    const { resourceType, resourceId, patientId, sealed } = command;
    if (command.type === 'CreateResource') {
      if (state.exists) throw new DomainError('conflict', 'RESOURCE_EXISTS', `${resourceType}/${resourceId} exists already.`);
      return [{ type: 'ClinicalResourceCreated', data: { resourceType, resourceId, patientId, sealed } }];
    }
    if (!state.exists) throw new DomainError('not_found', 'NOT_FOUND', `${resourceType}/${resourceId} was not found.`);
    if (command.expectedVersion !== undefined && command.expectedVersion !== state.version) throw staleVersion(state.version);
    return [{ type: 'ClinicalResourceUpdated', data: { resourceType, resourceId, patientId, sealed } }];
  },
};
