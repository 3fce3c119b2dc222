// The prior-authorization request aggregate: stream tenant-<employerId>.authorization-<id>. The
// platform submits it; the employer reviews it once (pending -> approved | denied).
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { AuthorizationEvent } from './events.ts';

export type AuthorizationCommand =
  | { type: 'RequestAuthorization'; authorizationId: string; patientId: string; treatment: string; justification: string; requestedAt: string }
  | { type: 'ReviewAuthorization'; decision: 'approved' | 'denied'; note: string | null; reviewedBy: string };

export type AuthorizationState =
  | { status: 'absent' }
  | { status: 'pending' | 'approved' | 'denied'; authorizationId: string; patientId: string };

export const authorizationDecider: Decider<AuthorizationCommand, AuthorizationEvent, AuthorizationState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'AuthorizationRequested':
        return { status: 'pending', authorizationId: event.data.authorizationId, patientId: event.data.patientId };
      case 'AuthorizationReviewed':
        return state.status === 'absent' ? state : { ...state, status: event.data.decision };
    }
  },
  decide: (command, state) => {
    if (command.type === 'RequestAuthorization') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'ALREADY_EXISTS', 'The authorization request exists.');
      const { type: _, ...data } = command;
      return [{ type: 'AuthorizationRequested', data }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'Authorization request was not found.');
    if (state.status !== 'pending') {
      throw new DomainError('conflict', 'ALREADY_REVIEWED', `The authorization request was already reviewed (${state.status}); a request is reviewed once.`);
    }
    const { decision, note, reviewedBy } = command;
    return [{ type: 'AuthorizationReviewed', data: { authorizationId: state.authorizationId, patientId: state.patientId, decision, note, reviewedBy } }];
  },
};
