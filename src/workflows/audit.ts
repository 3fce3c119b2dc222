// Audit records of the platform workflows, in the employer's audit trail (platform tokens belong to
// no employer: their creation and revocation are in the event log, under system streams).
import type { AuditMappers } from '../capability.ts';

export const workflowAuditMappers: AuditMappers = {
  AuthorizationRequested: (event) => ({ action: 'authorization.request', targetType: 'authorization', targetId: String(event.data.authorizationId), details: { patientId: event.data.patientId } }),
  AuthorizationReviewed: (event) => ({ action: 'authorization.review', targetType: 'authorization', targetId: String(event.data.authorizationId), details: { decision: event.data.decision } }),
  TaperingProposed: (event) => ({ action: 'tapering.propose', targetType: 'tapering_proposal', targetId: String(event.data.proposalId), details: { patientId: event.data.patientId } }),
  TaperingApproved: (event) => ({ action: 'tapering.approve', targetType: 'tapering_proposal', targetId: String(event.data.proposalId) }),
  TaperingDeclined: (event) => ({ action: 'tapering.decline', targetType: 'tapering_proposal', targetId: String(event.data.proposalId) }),
  InvoiceIssued: (event) => ({ action: 'invoice.issue', targetType: 'invoice', targetId: String(event.data.invoiceId), details: { number: event.data.number } }),
  InvoicePaid: (event) => ({ action: 'invoice.pay', targetType: 'invoice', targetId: String(event.data.invoiceId), details: { paidAt: event.data.paidAt } }),
  SimulationRequested: (event) => ({ action: 'simulation.run', targetType: 'simulation', targetId: String(event.data.simulationId) }),
  SimulationCompleted: (event) => ({ action: 'simulation.complete', targetType: 'simulation', targetId: String(event.data.simulationId) }),
};
