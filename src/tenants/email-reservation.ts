// E-mail addresses are unique across all employers. Uniqueness across aggregates cannot rest on a
// unique index of a read model (it lags, and is rebuilt), so each address has a reservation stream,
// system.emailReservation-<sha256(address)>, claimed with optimistic concurrency in the same append
// as the user's registration or e-mail change.
//
// An address that cannot be used is refused with one answer, whatever the reason (held by a user of
// this employer or of another, or in a domain another employer has verified, src/email-domains/):
// the spec's 409 says that the address is unavailable and nothing more, so no employer can learn
// from it where an address is held, or probe another employer's directory.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { systemStream } from '../event-store/port.ts';
import { sha256Hex } from '../crypto/tokens.ts';
import type { EmailReservationEvent } from './events.ts';

export const EMAIL_UNAVAILABLE_MESSAGE = 'This e-mail address cannot be used.';

/**
 * The one refusal of an unavailable address (SCIM: 409 uniqueness; FHIR: 409 duplicate; elsewhere 409
 * EMAIL_UNAVAILABLE). `details`: which of several addresses (a cohort's rows), never why.
 */
export const emailUnavailable = (details: Record<string, unknown> = {}) => new DomainError('conflict', 'EMAIL_UNAVAILABLE', EMAIL_UNAVAILABLE_MESSAGE, details);

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
      if (state.holder) throw emailUnavailable();
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
