// Events of e-mail domain claims (domain-claim.ts: one stream per employer and domain) and of domain
// reservations (domain-reservation.ts: one system stream per domain, held by the one employer whose
// claim is verified). The email-domains read model (projections/email-domains/) applies the claims'.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

export const VERIFICATION_METHODS = ['dns', 'operator'] as const;

const domain = z.string().max(253);

const emailDomainClaimed = eventSchema('EmailDomainClaimed', z.object({
  domain,
  /** Published by the employer in the TXT record that proves the claim (verificationRecord). */
  verificationToken: z.string(),
  claimedAt: z.string(),
}));
/** The TXT record an employer publishes to prove it controls `domain`: its claim's verification token. */
export function verificationRecord(domain: string, token: string) {
  return { name: `_employer-integrations.${domain}`, type: 'TXT' as const, value: `ei-verification=${token}` };
}

const emailDomainVerified = eventSchema('EmailDomainVerified', z.object({ domain, method: z.enum(VERIFICATION_METHODS), verifiedAt: z.string() }));
const emailDomainClaimWithdrawn = eventSchema('EmailDomainClaimWithdrawn', z.object({ domain, withdrawnAt: z.string() }));

const emailDomainReserved = eventSchema('EmailDomainReserved', z.object({ domain, employerId: z.string() }));
const emailDomainReleased = eventSchema('EmailDomainReleased', z.object({ domain, employerId: z.string() }));

const claimEvents = [emailDomainClaimed, emailDomainVerified, emailDomainClaimWithdrawn] as const;
const reservationEvents = [emailDomainReserved, emailDomainReleased] as const;
export const emailDomainEvents = [...claimEvents, ...reservationEvents] as const;

export type EmailDomainClaimEvent = EventOf<(typeof claimEvents)[number]>;
export type EmailDomainReservationEvent = EventOf<(typeof reservationEvents)[number]>;
