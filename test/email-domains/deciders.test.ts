// The rules of e-mail domain claims with no database: a claim is verified by its own DNS token or by
// an operator, one employer at most holds a domain, and an address is refused in a domain another
// employer holds with the very refusal of a taken address.
import { describe, expect, it } from 'vitest';
import { domainClaimDecider } from '../../src/email-domains/domain-claim.ts';
import { domainOfEmail, normalizeDomain } from '../../src/email-domains/domain-name.ts';
import { domainReservationDecider } from '../../src/email-domains/domain-reservation.ts';
import { verificationRecord, type EmailDomainClaimEvent, type EmailDomainReservationEvent } from '../../src/email-domains/events.ts';
import { EMAIL_UNAVAILABLE_MESSAGE, emailReservationDecider } from '../../src/tenants/email-reservation.ts';
import { DomainError } from '../../src/event-store/decider.ts';
import { deciderSpec } from '../support/decider.ts';

const now = '2030-01-01T00:00:00.000Z';
const claimed: EmailDomainClaimEvent = { type: 'EmailDomainClaimed', data: { domain: 'example-a.test', verificationToken: 'tok-1', claimedAt: now } };
const verifiedByDns: EmailDomainClaimEvent = { type: 'EmailDomainVerified', data: { domain: 'example-a.test', method: 'dns', verifiedAt: now } };
const withdrawn: EmailDomainClaimEvent = { type: 'EmailDomainClaimWithdrawn', data: { domain: 'example-a.test', withdrawnAt: now } };
const reservedToA: EmailDomainReservationEvent = { type: 'EmailDomainReserved', data: { domain: 'example-a.test', employerId: 'emp_a' } };
const releasedByA: EmailDomainReservationEvent = { type: 'EmailDomainReleased', data: { domain: 'example-a.test', employerId: 'emp_a' } };

describe('domain claim decider', () => {
  const given = deciderSpec(domainClaimDecider);
  const claim = { type: 'ClaimDomain', domain: 'example-a.test', verificationToken: 'tok-2', now } as const;

  it('claims a domain once: claiming again keeps the claim and its token; a withdrawn claim starts afresh', () => {
    given([]).when({ ...claim, verificationToken: 'tok-1' }).then([claimed]);
    given([claimed]).when(claim).then([]);
    given([claimed, verifiedByDns]).when(claim).then([]);
    given([claimed, withdrawn]).when(claim).then([{ type: 'EmailDomainClaimed', data: { domain: 'example-a.test', verificationToken: 'tok-2', claimedAt: now } }]);
  });

  it('verifies by DNS only when a published TXT value carries the claim\'s own token', () => {
    const record = verificationRecord('example-a.test', 'tok-1');
    given([claimed]).when({ type: 'VerifyDomainByDns', publishedValues: ['v=spf1 -all', record.value], now }).then([verifiedByDns]);
    given([claimed]).when({ type: 'VerifyDomainByDns', publishedValues: ['ei-verification=tok-of-another-employer'], now })
      .thenThrows({ kind: 'unprocessable', code: 'DOMAIN_NOT_VERIFIED' });
    given([claimed, verifiedByDns]).when({ type: 'VerifyDomainByDns', publishedValues: [], now }).then([]);
    given([]).when({ type: 'VerifyDomainByDns', publishedValues: [record.value], now }).thenThrows({ kind: 'not_found' });
    given([claimed, withdrawn]).when({ type: 'VerifyDomainByDns', publishedValues: [record.value], now }).thenThrows({ kind: 'not_found' });
  });

  it('lets an operator verify, claiming the domain first when the employer had not', () => {
    const byOperator = { type: 'VerifyDomainByOperator', domain: 'example-a.test', verificationToken: 'tok-1', now } as const;
    const verifiedByOperator: EmailDomainClaimEvent = { type: 'EmailDomainVerified', data: { domain: 'example-a.test', method: 'operator', verifiedAt: now } };
    given([]).when(byOperator).then([claimed, verifiedByOperator]);
    given([claimed]).when({ ...byOperator, verificationToken: 'unused' }).then([verifiedByOperator]);
    given([claimed, verifiedByDns]).when(byOperator).then([]);
  });

  it('withdraws a pending or verified claim; there is nothing to withdraw without one', () => {
    given([claimed]).when({ type: 'WithdrawDomainClaim', now }).then([withdrawn]);
    given([claimed, verifiedByDns]).when({ type: 'WithdrawDomainClaim', now }).then([withdrawn]);
    given([claimed, withdrawn]).when({ type: 'WithdrawDomainClaim', now }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
  });
});

describe('domain reservation decider', () => {
  const given = deciderSpec(domainReservationDecider);

  it('reserves a domain to one employer at most: a verified claim wins, others are refused until it is released', () => {
    given([]).when({ type: 'ReserveDomain', domain: 'example-a.test', employerId: 'emp_a' }).then([reservedToA]);
    given([reservedToA]).when({ type: 'ReserveDomain', domain: 'example-a.test', employerId: 'emp_a' }).then([]);
    given([reservedToA]).when({ type: 'ReserveDomain', domain: 'example-a.test', employerId: 'emp_b' }).thenThrows({ kind: 'conflict', code: 'DOMAIN_TAKEN' });
    given([reservedToA]).when({ type: 'AssertDomainFree', employerId: 'emp_b' }).thenThrows({ kind: 'conflict', code: 'DOMAIN_TAKEN' });
    given([reservedToA, releasedByA]).when({ type: 'ReserveDomain', domain: 'example-a.test', employerId: 'emp_b' })
      .then([{ type: 'EmailDomainReserved', data: { domain: 'example-a.test', employerId: 'emp_b' } }]);
  });

  it('is released only by its holder', () => {
    given([reservedToA]).when({ type: 'ReleaseDomain', domain: 'example-a.test', employerId: 'emp_a' }).then([releasedByA]);
    given([reservedToA]).when({ type: 'ReleaseDomain', domain: 'example-a.test', employerId: 'emp_b' }).then([]);
    given([]).when({ type: 'ReleaseDomain', domain: 'example-a.test', employerId: 'emp_a' }).then([]);
  });

  it('admits a new address for the holder and where no one holds the domain; refuses it elsewhere as a taken address', () => {
    given([]).when({ type: 'AdmitAddress', employerId: 'emp_b' }).then([]);
    given([reservedToA]).when({ type: 'AdmitAddress', employerId: 'emp_a' }).then([]);
    given([reservedToA, releasedByA]).when({ type: 'AdmitAddress', employerId: 'emp_b' }).then([]);
    given([reservedToA]).when({ type: 'AdmitAddress', employerId: 'emp_b' }).thenThrows({ kind: 'conflict', code: 'EMAIL_UNAVAILABLE', message: EMAIL_UNAVAILABLE_MESSAGE });
  });
});

describe('e-mail reservation decider', () => {
  const given = deciderSpec(emailReservationDecider);
  const reserved = { type: 'EmailReserved', data: { emailHash: 'h', employerId: 'emp_a', userId: 'u1' } } as const;

  it('refuses a taken address with the one refusal, whether this employer or another holds it', () => {
    for (const employerId of ['emp_a', 'emp_b']) {
      given([reserved]).when({ type: 'ReserveEmail', emailHash: 'h', employerId, userId: 'u2' }).thenThrows({ kind: 'conflict', code: 'EMAIL_UNAVAILABLE', message: EMAIL_UNAVAILABLE_MESSAGE });
    }
    // Nothing beyond the message: no field says which employer, or whether it is the caller.
    const refusal = (() => {
      try {
        return emailReservationDecider.decide({ type: 'ReserveEmail', emailHash: 'h', employerId: 'emp_b', userId: 'u2' }, { holder: { employerId: 'emp_a', userId: 'u1' } });
      } catch (error) {
        return error as DomainError;
      }
    })();
    expect(refusal).toBeInstanceOf(DomainError);
    expect((refusal as DomainError).details).toEqual({});
  });
});

describe('domain names', () => {
  it('compares domains in their ASCII form, whatever the spelling of the address', () => {
    expect(normalizeDomain('Example-A.TEST.')).toBe('example-a.test');
    expect(normalizeDomain('ｅxample-a.test')).toBe('example-a.test');
    expect(normalizeDomain('Bücher.de')).toBe('xn--bcher-kva.de');
    expect(domainOfEmail(' Ada@Sub.Example-A.test ')).toBe('sub.example-a.test');
    expect(domainOfEmail('"a@b"@example-a.test')).toBe('example-a.test');
  });

  it('refuses what is not a domain name a claim could hold', () => {
    for (const text of ['', 'localhost', '127.0.0.1', '[::1]', 'a..test', '-a.test', 'a_b.test', `${'a'.repeat(64)}.test`, 'x.123']) {
      expect(normalizeDomain(text), text).toBeNull();
    }
    expect(domainOfEmail('no-at-sign')).toBeNull();
  });
});
