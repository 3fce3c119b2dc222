// Which domain events become webhook deliveries. SPEC section 6 names the webhook event types; each
// capability that emits one adds its domain event here (as the patients capability's CohortUploaded).
// The fan-out consumer (`webhooks-fan-out`, src/webhooks/capability.ts) subscribes to exactly the domain
// event types listed.
import type { Scope } from '../auth/principal.ts';
import type { RecordedEvent } from '../event-store/port.ts';
import { REQUESTED_DELIVERY } from './requested-deliveries.ts';

export const WEBHOOK_EVENT_TYPES = [
  'test.ping',
  'tapering.proposed',
  'tapering.approved',
  'tapering.declined',
  'simulation.completed',
  'cohort.uploaded',
  'authorization.reviewed',
  'export.ready',
  'invoice.paid',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * What reading each event's data takes through the API. A subscription is a standing read of its
 * events, so an API key may send them to a URL only when it holds these scopes (webhooks/routes/subscriptions.ts);
 * `session`: no scope reads it (billing: an administrator's session), so no key may subscribe to it.
 */
export const WEBHOOK_EVENT_READ_ACCESS: Record<WebhookEventType, Scope | 'session' | null> = {
  'test.ping': null,
  'tapering.proposed': 'authorization:read',
  'tapering.approved': 'authorization:read',
  'tapering.declined': 'authorization:read',
  'authorization.reviewed': 'authorization:read',
  'simulation.completed': 'simulate:run',
  'cohort.uploaded': 'cohort:read',
  'export.ready': 'export:read',
  'invoice.paid': 'session',
};

export type WebhookEventMapping = {
  webhookEvent: WebhookEventType;
  /** The body's `data`: what a receiver may see of the event (never secrets). */
  data: (event: RecordedEvent) => Record<string, unknown>;
  /**
   * When set, the event goes to this one subscription (of the event's tenant) whatever its `events`
   * list says; otherwise to every active subscription of the tenant that lists `webhookEvent`.
   */
  onlyWebhookId?: (event: RecordedEvent) => string;
  /** The admission kind of a delivery the employer asked for (./requested-deliveries.ts): its delivery takes over a ticket. */
  admittedAs?: string;
};

/** domain event type -> webhook event. */
export type WebhookEventMappings = Record<string, WebhookEventMapping>;

export const webhookEventMappings: WebhookEventMappings = {
  // POST /api/employer/webhooks/{webhookId}/ping: a test.ping through the queue, with retries.
  WebhookPingRequested: {
    webhookEvent: 'test.ping',
    data: (event) => pingData(String(event.data.webhookId)),
    onlyWebhookId: (event) => String(event.data.webhookId),
    admittedAs: REQUESTED_DELIVERY,
  },
  // POST /api/employer/upload-cohort: the upload's summary (counts only, no personal data).
  CohortUploaded: {
    webhookEvent: 'cohort.uploaded',
    data: ({ data }) => ({ cohortId: data.cohortId, received: data.received, created: data.created, updated: data.updated, unchanged: data.unchanged }),
  },
  // An asynchronous export (CSV, FHIR Bulk Data) completed: where to download it.
  ExportCompleted: {
    webhookEvent: 'export.ready',
    data: ({ data }) => ({ exportId: data.exportId, kind: data.kind, rowCount: data.rowCount, downloadUrl: data.downloadUrl }),
  },
  // Platform workflows (src/workflows/): the data shapes are webhookDataSchemas (./payloads.ts).
  // POST /api/employer/authorizations/{id}/review.
  AuthorizationReviewed: {
    webhookEvent: 'authorization.reviewed',
    data: ({ data, metadata }) => ({
      authorizationId: data.authorizationId, patientId: data.patientId, decision: data.decision, note: data.note, reviewedBy: data.reviewedBy, reviewedAt: metadata.occurredAt,
    }),
  },
  // POST /api/platform/v1/employers/{employerId}/tapering-proposals.
  TaperingProposed: {
    webhookEvent: 'tapering.proposed',
    data: ({ data, metadata }) => ({ proposalId: data.proposalId, patientId: data.patientId, medication: data.medication, schedule: data.schedule, proposedAt: metadata.occurredAt }),
  },
  // POST /api/platform/v1/employers/{employerId}/tapering-proposals/{id}/decision.
  TaperingApproved: { webhookEvent: 'tapering.approved', data: taperingOutcomeData },
  TaperingDeclined: { webhookEvent: 'tapering.declined', data: taperingOutcomeData },
  // The simulation job's end (POST /api/employer/simulations). The month-by-month rows stay at GET /api/employer/simulations/{id}.
  SimulationCompleted: {
    webhookEvent: 'simulation.completed',
    data: ({ data, metadata }) => ({
      simulationId: data.simulationId,
      cohortId: data.cohortId,
      months: (data.months as unknown[]).length,
      currency: data.currency,
      totals: data.totals,
      completedAt: metadata.occurredAt,
    }),
  },
  // POST /api/platform/v1/employers/{employerId}/invoices/{id}/payments. The payment event carries the
  // invoice's fields so the webhook needs no read model.
  InvoicePaid: {
    webhookEvent: 'invoice.paid',
    data: ({ data }) => ({
      invoiceId: data.invoiceId, number: data.number, amountMinor: data.amountMinor, currency: data.currency,
      period: { start: data.periodStart, end: data.periodEnd }, paidAt: data.paidAt,
    }),
  },
};

function taperingOutcomeData({ data, metadata }: RecordedEvent): Record<string, unknown> {
  return { proposalId: data.proposalId, patientId: data.patientId, reason: data.reason, decidedAt: metadata.occurredAt };
}

/** The `data` of every test.ping, direct or queued. */
export function pingData(webhookId: string): Record<string, unknown> {
  return { webhookId, message: 'This is a test event from employer-integrations.' };
}

export function unknownWebhookEvents(events: readonly string[]): string[] {
  return events.filter((event) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event));
}
