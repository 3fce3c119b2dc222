// A clinical FHIR resource (CarePlan, Observation, DiagnosticReport, MedicationRequest) of one patient:
// stream `tenant-<employerId>.<resourceType>-<id>`, its content sealed under that patient's data key.
// Whether the patient exists (and is not erased) is checked by the command on the patient's stream.
// A delete is a version too (FHIR counts it): deleting again writes nothing, and an update brings a
// deleted resource back, as R4 allows.
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { ClinicalResourceEvent, ClinicalResourceType } from './events.ts';
import { staleVersion } from './patient.ts';

export type ClinicalResourceState = { exists: boolean; deleted: boolean; version: number; patientId: string | null };

type Identity = { resourceType: ClinicalResourceType; resourceId: string; patientId: string };
type Content = Identity & { sealed: string };
export type ClinicalResourceCommand =
  | ({ type: 'CreateResource' } & Content)
  | ({ type: 'UpdateResource'; expectedVersion?: number } & Content)
  | ({ type: 'DeleteResource'; expectedVersion?: number } & Omit<Identity, 'patientId'>);

const notFound = (resourceType: string, resourceId: string) => new DomainError('not_found', 'NOT_FOUND', `${resourceType}/${resourceId} was not found.`);

export const clinicalResourceDecider: Decider<ClinicalResourceCommand, ClinicalResourceEvent, ClinicalResourceState> = {
  initialState: () => ({ exists: false, deleted: false, version: 0, patientId: null }),
  evolve: (state, event) => ({ exists: true, deleted: event.type === 'ClinicalResourceDeleted', version: state.version + 1, patientId: event.data.patientId }),
  decide(command, state) {
    const { resourceType, resourceId } = command;
    if (command.type === 'CreateResource') {
      if (state.exists) throw new DomainError('conflict', 'RESOURCE_EXISTS', `${resourceType}/${resourceId} exists already.`);
      const { type: _type, ...data } = command;
      return [{ type: 'ClinicalResourceCreated', data }];
    }
    if (!state.exists) throw notFound(resourceType, resourceId);
    if (command.expectedVersion !== undefined && command.expectedVersion !== state.version) throw staleVersion(state.version);
    if (command.type === 'DeleteResource') {
      if (state.deleted) return [];
      return [{ type: 'ClinicalResourceDeleted', data: { resourceType, resourceId, patientId: state.patientId! } }];
    }
    const { patientId, sealed } = command;
    return [{ type: 'ClinicalResourceUpdated', data: { resourceType, resourceId, patientId, sealed } }];
  },
};
