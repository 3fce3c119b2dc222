// Browser sessions: stream tenant-<employerId>.session-<sessionId>. The cookie carries a random
// secret; only its hash is stored. Sessions expire and end on logout or when the user is deactivated.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { SessionEndReason, SessionEvent } from './events.ts';

export type SessionCommand =
  | { type: 'StartSession'; sessionId: string; userId: string; sessionHash: string; expiresAt: string }
  | { type: 'EndSession'; reason: SessionEndReason };

export type SessionState = { status: 'absent' } | { status: 'active' | 'ended'; sessionId: string; userId: string };

export const sessionDecider: Decider<SessionCommand, SessionEvent, SessionState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) =>
    event.type === 'SessionStarted'
      ? { status: 'active', sessionId: event.data.sessionId, userId: event.data.userId }
      : state.status === 'absent' ? state : { ...state, status: 'ended' },
  decide: (command, state) => {
    if (command.type === 'StartSession') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'Session already started.');
      const { type: _type, ...data } = command;
      return [{ type: 'SessionStarted', data }];
    }
    if (state.status !== 'active') return [];
    return [{ type: 'SessionEnded', data: { sessionId: state.sessionId, userId: state.userId, reason: command.reason } }];
  },
};

export const sessionStream = (employerId: string, sessionId: string) => tenantStream(employerId, 'session', sessionId);
