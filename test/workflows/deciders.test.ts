// The review and tapering state machines (and invoice payment, platform token revocation), given /
// when / then with no database.
import { describe, expect, it } from 'vitest';
import { authorizationDecider } from '../../src/workflows/authorization.ts';
import { invoiceDecider } from '../../src/workflows/invoice.ts';
import { platformTokenDecider } from '../../src/workflows/platform-token.ts';
import { projectCosts, simulationDecider } from '../../src/workflows/simulation.ts';
import { taperingDecider } from '../../src/workflows/tapering.ts';
import { deciderSpec } from '../support/decider.ts';

const requested = {
  type: 'AuthorizationRequested' as const,
  data: { authorizationId: 'auth_1', patientId: 'pat_1', treatment: 'MRI', justification: 'persistent pain', requestedAt: '2026-11-01T10:00:00.000Z' },
};

describe('authorization review', () => {
  const given = deciderSpec(authorizationDecider);

  it('a pending request is reviewed once, carrying the patient', () => {
    given([requested]).when({ type: 'ReviewAuthorization', decision: 'approved', note: 'ok', reviewedBy: 'usr_1' }).then([
      { type: 'AuthorizationReviewed', data: { authorizationId: 'auth_1', patientId: 'pat_1', decision: 'approved', note: 'ok', reviewedBy: 'usr_1' } },
    ]);
  });

  it('a second review is 409, whatever its decision', () => {
    const reviewed = { type: 'AuthorizationReviewed' as const, data: { authorizationId: 'auth_1', patientId: 'pat_1', decision: 'denied' as const, note: null, reviewedBy: 'usr_1' } };
    given([requested, reviewed]).when({ type: 'ReviewAuthorization', decision: 'approved', note: null, reviewedBy: 'usr_2' }).thenThrows({ kind: 'conflict', code: 'ALREADY_REVIEWED' });
    given([requested, reviewed]).when({ type: 'ReviewAuthorization', decision: 'denied', note: null, reviewedBy: 'usr_1' }).thenThrows({ kind: 'conflict', code: 'ALREADY_REVIEWED' });
  });

  it('an unknown request is 404, and a request id is used once', () => {
    given([]).when({ type: 'ReviewAuthorization', decision: 'approved', note: null, reviewedBy: 'usr_1' }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
    given([requested]).when({ type: 'RequestAuthorization', ...requested.data }).thenThrows({ kind: 'conflict' });
  });
});

describe('tapering proposal', () => {
  const given = deciderSpec(taperingDecider);
  const proposed = {
    type: 'TaperingProposed' as const,
    data: { proposalId: 'tap_1', patientId: 'pat_1', medication: 'oxycodone', schedule: [{ startsOn: '2026-12-01', dailyDose: 20, unit: 'mg' }] },
  };
  const outcome = { proposalId: 'tap_1', patientId: 'pat_1', reason: null };

  it('proposed -> approved and proposed -> declined', () => {
    given([proposed]).when({ type: 'DecideTapering', decision: 'approved', reason: null }).then([{ type: 'TaperingApproved', data: outcome }]);
    given([proposed]).when({ type: 'DecideTapering', decision: 'declined', reason: 'patient declined' }).then([
      { type: 'TaperingDeclined', data: { ...outcome, reason: 'patient declined' } },
    ]);
  });

  it('a decided proposal cannot be decided again (409), nor an unknown one (404)', () => {
    given([proposed, { type: 'TaperingApproved', data: outcome }]).when({ type: 'DecideTapering', decision: 'declined', reason: null }).thenThrows({ kind: 'conflict', code: 'ILLEGAL_TRANSITION' });
    given([proposed, { type: 'TaperingDeclined', data: outcome }]).when({ type: 'DecideTapering', decision: 'approved', reason: null }).thenThrows({ kind: 'conflict', code: 'ILLEGAL_TRANSITION' });
    given([proposed, { type: 'TaperingDeclined', data: outcome }]).when({ type: 'DecideTapering', decision: 'declined', reason: null }).thenThrows({ kind: 'conflict', code: 'ILLEGAL_TRANSITION' });
    given([]).when({ type: 'DecideTapering', decision: 'approved', reason: null }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
  });
});

describe('invoice', () => {
  const given = deciderSpec(invoiceDecider);
  const fields = { invoiceId: 'inv_1', number: 'INV-7', amountMinor: 125_000, currency: 'USD', periodStart: '2026-10-01', periodEnd: '2026-10-31' };

  it('is paid once, the payment carrying the invoice', () => {
    given([{ type: 'InvoiceIssued', data: fields }]).when({ type: 'PayInvoice', paidAt: '2026-11-05T09:00:00.000Z' }).then([
      { type: 'InvoicePaid', data: { ...fields, paidAt: '2026-11-05T09:00:00.000Z' } },
    ]);
    given([{ type: 'InvoiceIssued', data: fields }, { type: 'InvoicePaid', data: { ...fields, paidAt: '2026-11-05T09:00:00.000Z' } }])
      .when({ type: 'PayInvoice', paidAt: '2026-11-06T09:00:00.000Z' })
      .thenThrows({ kind: 'conflict', code: 'ALREADY_PAID' });
  });
});

describe('platform token', () => {
  const given = deciderSpec(platformTokenDecider);
  const created = { type: 'PlatformTokenCreated' as const, data: { tokenId: 'ptok_1', name: 'billing', families: ['invoice' as const], tokenHash: 'ab' } };

  it('is revoked once; revoking again changes nothing', () => {
    given([created]).when({ type: 'RevokePlatformToken' }).then([{ type: 'PlatformTokenRevoked', data: { tokenId: 'ptok_1' } }]);
    given([created, { type: 'PlatformTokenRevoked', data: { tokenId: 'ptok_1' } }]).when({ type: 'RevokePlatformToken' }).then([]);
    given([]).when({ type: 'RevokePlatformToken' }).thenThrows({ kind: 'not_found' });
  });
});

describe('simulation', () => {
  const input = { cohortId: null, months: 3, adoptionRate: 0.5, baselineMonthlyCostMinor: 10_000, taperedMonthlyCostMinor: 4_000, currency: 'USD' };

  it('ramps participants linearly over min(6, months) and sums the months', () => {
    // ramp = 3 months; 10 members, half adopt: floor(5 * m / 3) = 1, 3, 5 participants.
    const { months, totals } = projectCosts(input, 10);
    expect(months.map((month) => month.participants)).toEqual([1, 3, 5]);
    expect(months[0]).toEqual({ month: 1, participants: 1, baselineCostMinor: 100_000, projectedCostMinor: 94_000, savingsMinor: 6_000 });
    expect(totals).toEqual({ members: 10, baselineCostMinor: 300_000, projectedCostMinor: 246_000, savingsMinor: 54_000 });
  });

  it('completes once: a re-run job adds nothing', () => {
    const given = deciderSpec(simulationDecider);
    const requestedSim = { type: 'SimulationRequested' as const, data: { simulationId: 'sim_1', ...input } };
    given([requestedSim]).when({ type: 'CompleteSimulation', members: 10 }).then([
      { type: 'SimulationCompleted', data: { simulationId: 'sim_1', cohortId: null, currency: 'USD', ...projectCosts(input, 10) } },
    ]);
    given([requestedSim, { type: 'SimulationCompleted', data: { simulationId: 'sim_1', cohortId: null, currency: 'USD', ...projectCosts(input, 10) } }])
      .when({ type: 'CompleteSimulation', members: 11 })
      .then([]);
  });
});
