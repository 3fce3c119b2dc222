// The employer (tenant) aggregate: stream tenant-<employerId>.employer-<employerId>.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { EmployerEvent } from './events.ts';

export type CreateEmployer = { type: 'CreateEmployer'; employerId: string; name: string; now: string };
export type EmployerCommand = CreateEmployer;

export type EmployerState = { exists: boolean; name: string | null };

export const employerDecider: Decider<EmployerCommand, EmployerEvent, EmployerState> = {
  initialState: () => ({ exists: false, name: null }),
  evolve: (state, event) => (event.type === 'EmployerCreated' ? { exists: true, name: event.data.name } : state),
  decide: (command, state) => {
    if (state.exists) throw new DomainError('conflict', 'EMPLOYER_EXISTS', `Employer ${command.employerId} already exists.`);
    return [{ type: 'EmployerCreated', data: { employerId: command.employerId, name: command.name, createdAt: command.now } }];
  },
};

export const employerStream = (employerId: string) => tenantStream(employerId, 'employer', employerId);
