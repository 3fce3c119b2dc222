// Events of the platform workflows: platform service tokens (system streams), and per employer the
// authorization request, tapering proposal, invoice and simulation aggregates. Applied by
// projections/workflows/.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

/** What a platform service token may report: one family per aggregate the platform feeds. */
export const PLATFORM_FAMILIES = ['authorization', 'tapering', 'invoice'] as const;
export type PlatformFamily = (typeof PLATFORM_FAMILIES)[number];

const platformTokenCreated = eventSchema('PlatformTokenCreated', z.object({
  tokenId: z.string(),
  name: z.string(),
  families: z.array(z.enum(PLATFORM_FAMILIES)),
  tokenHash: z.string(),
}));
const platformTokenRevoked = eventSchema('PlatformTokenRevoked', z.object({ tokenId: z.string() }));

const authorizationRequested = eventSchema('AuthorizationRequested', z.object({
  authorizationId: z.string(),
  patientId: z.string(),
  treatment: z.string(),
  justification: z.string(),
  requestedAt: z.string(),
}));
const authorizationReviewed = eventSchema('AuthorizationReviewed', z.object({
  authorizationId: z.string(),
  patientId: z.string(),
  decision: z.enum(['approved', 'denied']),
  note: z.string().nullable(),
  reviewedBy: z.string(),
}));

const taperingStep = z.object({ startsOn: z.string(), dailyDose: z.number(), unit: z.string() });
export type TaperingStep = z.infer<typeof taperingStep>;
const taperingProposed = eventSchema('TaperingProposed', z.object({
  proposalId: z.string(),
  patientId: z.string(),
  medication: z.string(),
  schedule: z.array(taperingStep),
}));
// Two event types, not one with a decision field: each becomes its own webhook event type.
const taperingOutcome = z.object({ proposalId: z.string(), patientId: z.string(), reason: z.string().nullable() });
const taperingApproved = eventSchema('TaperingApproved', taperingOutcome);
const taperingDeclined = eventSchema('TaperingDeclined', taperingOutcome);

const invoiceFields = z.object({
  invoiceId: z.string(),
  number: z.string(),
  amountMinor: z.number().int(),
  currency: z.string(),
  periodStart: z.string(),
  periodEnd: z.string(),
});
export type InvoiceFields = z.infer<typeof invoiceFields>;
const invoiceIssued = eventSchema('InvoiceIssued', invoiceFields);
/** Carries the invoice's fields again, so invoice.paid is built from this event alone. */
const invoicePaid = eventSchema('InvoicePaid', invoiceFields.extend({ paidAt: z.string() }));

export const simulationInput = z.object({
  cohortId: z.string().nullable(),
  months: z.number().int(),
  adoptionRate: z.number(),
  baselineMonthlyCostMinor: z.number().int(),
  taperedMonthlyCostMinor: z.number().int(),
  currency: z.string(),
});
export type SimulationInput = z.infer<typeof simulationInput>;
export const simulationMonth = z.object({
  month: z.number().int(),
  participants: z.number().int(),
  baselineCostMinor: z.number().int(),
  projectedCostMinor: z.number().int(),
  savingsMinor: z.number().int(),
});
export const simulationTotals = z.object({
  members: z.number().int(),
  baselineCostMinor: z.number().int(),
  projectedCostMinor: z.number().int(),
  savingsMinor: z.number().int(),
});
const simulationRequested = eventSchema('SimulationRequested', simulationInput.extend({ simulationId: z.string() }));
const simulationCompleted = eventSchema('SimulationCompleted', z.object({
  simulationId: z.string(),
  cohortId: z.string().nullable(),
  currency: z.string(),
  months: z.array(simulationMonth),
  totals: simulationTotals,
}));

const platformTokenEvents = [platformTokenCreated, platformTokenRevoked] as const;
const authorizationEvents = [authorizationRequested, authorizationReviewed] as const;
const taperingEvents = [taperingProposed, taperingApproved, taperingDeclined] as const;
const invoiceEvents = [invoiceIssued, invoicePaid] as const;
const simulationEvents = [simulationRequested, simulationCompleted] as const;
export const workflowEvents = [...platformTokenEvents, ...authorizationEvents, ...taperingEvents, ...invoiceEvents, ...simulationEvents] as const;

export type WorkflowEvent = EventOf<(typeof workflowEvents)[number]>;
export type PlatformTokenEvent = EventOf<(typeof platformTokenEvents)[number]>;
export type AuthorizationEvent = EventOf<(typeof authorizationEvents)[number]>;
export type TaperingEvent = EventOf<(typeof taperingEvents)[number]>;
export type InvoiceEvent = EventOf<(typeof invoiceEvents)[number]>;
export type SimulationEvent = EventOf<(typeof simulationEvents)[number]>;
export const WORKFLOW_EVENT_NAMES: readonly WorkflowEvent['type'][] = workflowEvents.map((schema) => schema.type);
