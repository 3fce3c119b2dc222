// Which domain events become webhook deliveries. SPEC section 6 names the webhook event types; each
// capability that emits one adds its domain event here, e.g. a future cohorts capability adds
//   CohortUploaded: { webhookEvent: 'cohort.uploaded', data: (event) => ({ cohortId: ..., patientCount: ... }) }
// The fan-out consumer (src/webhooks/fan-out.ts) subscribes to exactly the domain event types listed.
import type { RecordedEvent } from '../event-store/port.ts';

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

export type WebhookEventMapping = {
  webhookEvent: WebhookEventType;
  /** The body's `data`: what a receiver may see of the event (never secrets). */
  data: (event: RecordedEvent) => Record<string, unknown>;
  /**
   * When set, the event goes to this one subscription (of the event's tenant) whatever its `events`
   * list says; otherwise to every active subscription of the tenant that lists `webhookEvent`.
   */
  onlyWebhookId?: (event: RecordedEvent) => string;
};

/** domain event type -> webhook event. */
export type WebhookEventMappings = Record<string, WebhookEventMapping>;

export const webhookEventMappings: WebhookEventMappings = {
  // POST /api/employer/webhooks/{webhookId}/ping: a test.ping through the queue, with retries.
  WebhookPingRequested: {
    webhookEvent: 'test.ping',
    data: (event) => pingData(String(event.data.webhookId)),
    onlyWebhookId: (event) => String(event.data.webhookId),
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
};

/** The `data` of every test.ping, direct or queued. */
export function pingData(webhookId: string): Record<string, unknown> {
  return { webhookId, message: 'This is a test event from employer-integrations.' };
}

export function unknownWebhookEvents(events: readonly string[]): string[] {
  return events.filter((event) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(event));
}
