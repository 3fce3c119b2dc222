// An employer's claim on an e-mail domain: stream tenant-<employerId>.emailDomain-<domain>. Claimed
// (pending) with a verification token, verified once (through DNS, or by an operator who vouches for
// it), and withdrawn by the employer; a later claim starts afresh with a new token. Whether the claim
// protects the domain's addresses is the domain reservation's business (domain-reservation.ts),
// written in the same append as the verification and the withdrawal.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import { verificationRecord, type EmailDomainClaimEvent } from './events.ts';

export type DomainClaimCommand =
  | { type: 'ClaimDomain'; domain: string; verificationToken: string; now: string }
  /** `publishedValues`: the TXT values found at the claim's record name; one must carry the claim's token. */
  | { type: 'VerifyDomainByDns'; publishedValues: string[]; now: string }
  /** An operator vouches for the employer: claims the domain first when it has no claim. */
  | { type: 'VerifyDomainByOperator'; domain: string; verificationToken: string; now: string }
  | { type: 'WithdrawDomainClaim'; now: string };

export type DomainClaimState =
  | { status: 'absent' }
  | { status: 'pending' | 'verified'; domain: string; verificationToken: string };

export const noDomainClaim = () => new DomainError('not_found', 'NOT_FOUND', 'This employer has no claim on this domain.');

export const domainClaimDecider: Decider<DomainClaimCommand, EmailDomainClaimEvent, DomainClaimState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'EmailDomainClaimed':
        return { status: 'pending', domain: event.data.domain, verificationToken: event.data.verificationToken };
      case 'EmailDomainVerified':
        return state.status === 'absent' ? state : { ...state, status: 'verified' };
      case 'EmailDomainClaimWithdrawn':
        return { status: 'absent' };
    }
  },
  decide: (command, state) => {
    switch (command.type) {
      case 'ClaimDomain': {
        // Claiming again keeps the claim (and its token) as it is.
        if (state.status !== 'absent') return [];
        const { domain, verificationToken, now } = command;
        return [{ type: 'EmailDomainClaimed', data: { domain, verificationToken, claimedAt: now } }];
      }
      case 'VerifyDomainByDns': {
        if (state.status === 'absent') throw noDomainClaim();
        if (state.status === 'verified') return [];
        const record = verificationRecord(state.domain, state.verificationToken);
        if (!command.publishedValues.includes(record.value)) {
          throw new DomainError('unprocessable', 'DOMAIN_NOT_VERIFIED', `No TXT record "${record.value}" was found at ${record.name}. Publish it (a DNS change may take a while to be seen) and verify again.`, {
            reason: 'record_not_found',
            txtRecord: record,
          });
        }
        return [{ type: 'EmailDomainVerified', data: { domain: state.domain, method: 'dns', verifiedAt: command.now } }];
      }
      case 'VerifyDomainByOperator': {
        if (state.status === 'verified') return [];
        const { domain, verificationToken, now } = command;
        const verified = { type: 'EmailDomainVerified', data: { domain, method: 'operator', verifiedAt: now } } as const;
        if (state.status === 'pending') return [verified];
        return [{ type: 'EmailDomainClaimed', data: { domain, verificationToken, claimedAt: now } }, verified];
      }
      case 'WithdrawDomainClaim':
        if (state.status === 'absent') throw noDomainClaim();
        return [{ type: 'EmailDomainClaimWithdrawn', data: { domain: state.domain, withdrawnAt: command.now } }];
    }
  },
};

export const domainClaimStream = (employerId: string, domain: string) => tenantStream(employerId, 'emailDomain', domain);
