// E-mail addresses are unique across all employers. Uniqueness across aggregates cannot rest on a
// unique index of a read model (it lags, and is rebuilt), so each address has a reservation stream,
// system.emailReservation-<sha256(address)>, claimed with optimistic concurrency in the same append
// as the user's registration or e-mail change.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { systemStream } from '../event-store/port.ts';
import { sha256Hex } from '../crypto/tokens.ts';
import type { EmailReservationEvent } from './events.ts';

export type EmailReservationCommand =
  | { type: 'ReserveEmail'; emailHash: string; employerId: string; userId: string }
  | { type: 'ReleaseEmail'; emailHash: string; userId: string };

export type EmailReservationState = { holder: { employerId: string; userId: string } | null };

export const emailReservationDecider: Decider<EmailReservationCommand, EmailReservationEvent, EmailReservationState> = {
  initialState: () => ({ holder: null }),
  evolve: (_state, event) =>
    event.type === 'EmailReserved' ? { holder: { employerId: event.data.employerId, userId: event.data.userId } } : { holder: null },
  decide: (command, state) => {
    if (command.type === 'ReserveEmail') {
      if (state.holder?.userId === command.userId) return [];
      if (state.holder) {
        const sameEmployer = state.holder.employerId === command.employerId;
        throw new DomainError(409, sameEmployer ? 'EMAIL_TAKEN' : 'EMAIL_TAKEN_ELSEWHERE',
          sameEmployer ? 'A user with this e-mail already exists in this employer.' : 'A user with this e-mail already exists in another employer.',
          { sameEmployer });
      }
      return [{ type: 'EmailReserved', data: { emailHash: command.emailHash, employerId: command.employerId, userId: command.userId } }];
    }
    if (state.holder?.userId !== command.userId) return [];
    return [{ type: 'EmailReleased', data: { emailHash: command.emailHash, userId: command.userId } }];
  },
};

export function emailHash(email: string): string {
  return sha256Hex(email.trim().toLowerCase());
}

export const emailReservationStream = (hash: string) => systemStream('emailReservation', hash);
