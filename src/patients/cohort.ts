// A cohort upload (stream `tenant-<employerId>.cohort-<cohortId>`): the upload's summary, recorded once,
// in the same append as the patients it registered and updated (src/patients/commands.ts).
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { CohortUploaded } from './events.ts';

export type CohortState = { recorded: boolean };
export type CohortCommand = { type: 'RecordUpload' } & CohortUploaded['data'];

export const cohortDecider: Decider<CohortCommand, CohortUploaded, CohortState> = {
  initialState: () => ({ recorded: false }),
  evolve: () => ({ recorded: true }),
  decide(command, state) {
    if (state.recorded) throw new DomainError('conflict', 'COHORT_EXISTS', `Cohort ${command.cohortId} exists already.`);
    const { type: _type, ...data } = command;
    return [{ type: 'CohortUploaded', data }];
  },
};
