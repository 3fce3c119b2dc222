// Which employer, if any, a domain's addresses are reserved to: stream system.emailDomainReservation-
// <domain>, held by the one employer whose claim is verified. The reservation is taken in the same
// append as the claim's verification (so two employers never hold one domain, whatever races) and
// released with the claim's withdrawal. Every write that reserves an e-mail address for an employer
// decides `AdmitAddress` on the address's domain in its own batch of commands: an address in a
// domain held by another employer is refused exactly as a taken address is (emailUnavailable).
//
// The admission reads the domain's stream without writing to it, so a verification that commits
// between that read and the address's append lets the address through: it then counts among the
// addresses held before the claim, which stay where they are (a claim governs new addresses only).
import type { CommandContext, StreamCommand } from '../event-store/command-handler.ts';
import { DomainError, type Decider } from '../event-store/decider.ts';
import { systemStream } from '../event-store/port.ts';
import { emailUnavailable } from '../tenants/email-reservation.ts';
import { domainOfEmail } from './domain-name.ts';
import type { EmailDomainReservationEvent } from './events.ts';

export type DomainReservationCommand =
  | { type: 'ReserveDomain'; domain: string; employerId: string }
  | { type: 'ReleaseDomain'; domain: string; employerId: string }
  /** Refuses a new claim where another employer holds the domain already. */
  | { type: 'AssertDomainFree'; employerId: string }
  /** Refuses a new address of `employerId` in a domain another employer holds. */
  | { type: 'AdmitAddress'; employerId: string };

export type DomainReservationState = { holder: string | null };

const domainTaken = () => new DomainError('conflict', 'DOMAIN_TAKEN', 'Another employer has verified this domain.');

/** Whether a domain held by `holder` is closed to new addresses of `employerId`. */
const closedTo = (holder: string | null, employerId: string) => holder !== null && holder !== employerId;

export const domainReservationDecider: Decider<DomainReservationCommand, EmailDomainReservationEvent, DomainReservationState> = {
  initialState: () => ({ holder: null }),
  evolve: (_state, event) => ({ holder: event.type === 'EmailDomainReserved' ? event.data.employerId : null }),
  decide: (command, state) => {
    switch (command.type) {
      case 'ReserveDomain':
        if (state.holder === command.employerId) return [];
        if (state.holder !== null) throw domainTaken();
        return [{ type: 'EmailDomainReserved', data: { domain: command.domain, employerId: command.employerId } }];
      case 'ReleaseDomain':
        return state.holder === command.employerId ? [{ type: 'EmailDomainReleased', data: { domain: command.domain, employerId: command.employerId } }] : [];
      case 'AssertDomainFree':
        if (closedTo(state.holder, command.employerId)) throw domainTaken();
        return [];
      case 'AdmitAddress':
        if (closedTo(state.holder, command.employerId)) throw emailUnavailable();
        return [];
    }
  },
};

const domainReservationStream = (domain: string) => systemStream('emailDomainReservation', domain);

/** A command on the domain's reservation, in the system stream's context (it belongs to no employer). */
export function domainReservationCommand(context: CommandContext, domain: string, command: DomainReservationCommand): StreamCommand<DomainReservationCommand, EmailDomainReservationEvent, DomainReservationState> {
  return { streamName: domainReservationStream(domain), decider: domainReservationDecider, command, context: { ...context, tenantId: null } };
}

/**
 * The admission of a new address of `employerId`, for the batch that reserves it: none for no address,
 * or one whose domain no claim can name.
 */
export function admitAddressCommands(context: CommandContext, email: string | null, employerId: string) {
  const domain = email === null ? null : domainOfEmail(email);
  return domain === null ? [] : [domainReservationCommand(context, domain, { type: 'AdmitAddress', employerId })];
}
