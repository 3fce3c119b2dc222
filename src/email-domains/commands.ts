// Commands on e-mail domain claims. A claim is one append on the employer's claim stream; verifying
// and withdrawing also take and release the domain's reservation in the same append, so a domain is
// verified by one employer at most. Competing pending claims stay pending: they protect nothing, and
// their verification is refused (409 DOMAIN_TAKEN) for as long as another employer holds the domain.
import type { AppContext } from '../app-context.ts';
import { employerOf, handleCommands, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError, fold } from '../event-store/decider.ts';
import { countOtherDomainClaims, domainsVerifiedByOthers } from '../../projections/email-domains/queries.ts';
import { domainClaimDecider, domainClaimStream, noDomainClaim, type DomainClaimCommand } from './domain-claim.ts';
import { domainOfEmail, newVerificationToken } from './domain-name.ts';
import { domainReservationCommand } from './domain-reservation.ts';
import { verificationRecord, type EmailDomainClaimEvent } from './events.ts';
import type { TxtLookup } from './dns-verification.ts';
import { employerStream } from '../tenants/employer.ts';

/** Claims an employer may hold at once, pending or verified (checked on the read model: a burst may pass it by a few). */
export const MAX_DOMAIN_CLAIMS = 100;

const claimCommand = (context: CommandContext, domain: string, command: DomainClaimCommand) => ({
  streamName: domainClaimStream(employerOf(context), domain),
  decider: domainClaimDecider,
  command,
  context,
});

/**
 * Claims `domain` (normalised, domain-name.ts) for the context's employer, with a new verification
 * token; claiming it again changes nothing. Refused (409 DOMAIN_TAKEN) while another employer holds it.
 * `created`: whether this call made the claim.
 */
export async function claimDomain(ctx: AppContext, context: CommandContext, input: { domain: string }): Promise<{ created: boolean }> {
  const employerId = employerOf(context);
  if ((await countOtherDomainClaims(ctx.db.slonik, employerId, input.domain)) >= MAX_DOMAIN_CLAIMS) {
    throw new DomainError('conflict', 'TOO_MANY_DOMAIN_CLAIMS', `An employer holds at most ${MAX_DOMAIN_CLAIMS} domain claims; withdraw one first.`, { maxClaims: MAX_DOMAIN_CLAIMS });
  }
  const { results } = await handleCommands(ctx.commands, [
    claimCommand(context, input.domain, { type: 'ClaimDomain', domain: input.domain, verificationToken: newVerificationToken(), now: new Date().toISOString() }),
    domainReservationCommand(context, input.domain, { type: 'AssertDomainFree', employerId }),
  ]);
  return { created: results[0].newEvents.length > 0 };
}

/**
 * Verifies the employer's pending claim on `domain` by its TXT record (looked up only for a pending
 * claim), and reserves the domain to the employer in the same append.
 */
export async function verifyDomainByDns(ctx: AppContext, lookupTxt: TxtLookup, context: CommandContext, input: { domain: string }): Promise<void> {
  const employerId = employerOf(context);
  const claim = fold(domainClaimDecider, (await ctx.eventStore.readStream(domainClaimStream(employerId, input.domain))) as unknown as EmailDomainClaimEvent[]);
  if (claim.status === 'absent') throw noDomainClaim();
  if (claim.status === 'verified') return;
  const publishedValues = await lookupTxt(verificationRecord(claim.domain, claim.verificationToken).name);
  await handleCommands(ctx.commands, [
    claimCommand(context, input.domain, { type: 'VerifyDomainByDns', publishedValues, now: new Date().toISOString() }),
    domainReservationCommand(context, input.domain, { type: 'ReserveDomain', domain: input.domain, employerId }),
  ]);
}

/** An operator vouches that the employer controls `domain`: claimed (if it was not) and verified in one append. */
export async function verifyDomainByOperator(ctx: AppContext, context: CommandContext, input: { domain: string }): Promise<void> {
  const employerId = employerOf(context);
  if ((await ctx.eventStore.readStream(employerStream(employerId))).length === 0) throw new DomainError('not_found', 'NOT_FOUND', `No employer has the id ${employerId}.`);
  await handleCommands(ctx.commands, [
    claimCommand(context, input.domain, { type: 'VerifyDomainByOperator', domain: input.domain, verificationToken: newVerificationToken(), now: new Date().toISOString() }),
    domainReservationCommand(context, input.domain, { type: 'ReserveDomain', domain: input.domain, employerId }),
  ]);
}

/** Withdraws the employer's claim, and releases the domain's reservation when the claim was verified. */
export async function withdrawDomainClaim(ctx: AppContext, context: CommandContext, input: { domain: string }): Promise<void> {
  const employerId = employerOf(context);
  await handleCommands(ctx.commands, [
    claimCommand(context, input.domain, { type: 'WithdrawDomainClaim', now: new Date().toISOString() }),
    domainReservationCommand(context, input.domain, { type: 'ReleaseDomain', domain: input.domain, employerId }),
  ]);
}

/**
 * The positions in `emails` of the addresses `employerId` may not take up because another employer
 * has verified their domain: for writes of many addresses at once (a cohort upload), one query on the
 * read model instead of one read per domain. A verification waits for that model before it answers.
 */
export async function addressesInOthersDomains(ctx: AppContext, employerId: string, emails: readonly string[]): Promise<number[]> {
  const domains = emails.map(domainOfEmail);
  const closed = await domainsVerifiedByOthers(ctx.db.slonik, employerId, [...new Set(domains.filter((domain) => domain !== null))]);
  return domains.flatMap((domain, index) => (domain !== null && closed.has(domain) ? [index] : []));
}
