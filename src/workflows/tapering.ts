// The tapering proposal aggregate: stream tenant-<employerId>.tapering-<id>. The platform reports a
// proposal, then its outcome once: proposed -> approved | declined; anything else is 409.
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { TaperingEvent, TaperingStep } from './events.ts';

export type TaperingCommand =
  | { type: 'ProposeTapering'; proposalId: string; patientId: string; medication: string; schedule: TaperingStep[] }
  | { type: 'DecideTapering'; decision: 'approved' | 'declined'; reason: string | null };

export type TaperingState =
  | { status: 'absent' }
  | { status: 'proposed' | 'approved' | 'declined'; proposalId: string; patientId: string };

export const taperingDecider: Decider<TaperingCommand, TaperingEvent, TaperingState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'TaperingProposed':
        return { status: 'proposed', proposalId: event.data.proposalId, patientId: event.data.patientId };
      case 'TaperingApproved':
        return state.status === 'absent' ? state : { ...state, status: 'approved' };
      case 'TaperingDeclined':
        return state.status === 'absent' ? state : { ...state, status: 'declined' };
    }
  },
  decide: (command, state) => {
    if (command.type === 'ProposeTapering') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'ALREADY_EXISTS', 'The tapering proposal exists.');
      const { type: _, ...data } = command;
      return [{ type: 'TaperingProposed', data }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'Tapering proposal was not found.');
    if (state.status !== 'proposed') {
      throw new DomainError('conflict', 'ILLEGAL_TRANSITION', `The tapering proposal is already ${state.status}; only a proposed one can be decided.`);
    }
    const data = { proposalId: state.proposalId, patientId: state.patientId, reason: command.reason };
    return [command.decision === 'approved' ? { type: 'TaperingApproved', data } : { type: 'TaperingDeclined', data }];
  },
};
