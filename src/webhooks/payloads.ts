// The `data` of each webhook event type as a zod schema: the contract receivers generate types from.
// `/api/openapi` lists each under OpenAPI 3.1 `webhooks` (registerWebhookPayloads), with the full
// delivered body (SPEC 2.3) around it. Amounts are integers in the currency's minor unit; times are
// ISO 8601; patient ids are the service's patient ids (never names or other personal data).
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import type { WebhookEventType } from './event-types.ts';

const WEBHOOK_SIGNATURE_SCHEME = 'webhookSignature';

const taperingOutcome = (decision: string) => z.object({
  proposalId: z.string(),
  patientId: z.string(),
  reason: z.string().nullable().meta({ description: `Why the proposal was ${decision}, as the platform reported it.` }),
  decidedAt: z.string().meta({ description: 'When the outcome was recorded (ISO 8601).' }),
});
const money = { amountMinor: z.number().int(), currency: z.string().length(3) };
const totals = z.object({ members: z.number().int(), baselineCostMinor: z.number().int(), projectedCostMinor: z.number().int(), savingsMinor: z.number().int() });

export const webhookDataSchemas = {
  'test.ping': z.object({ webhookId: z.string(), message: z.string() }),
  'tapering.proposed': z.object({
    proposalId: z.string(),
    patientId: z.string(),
    medication: z.string(),
    schedule: z.array(z.object({ startsOn: z.string(), dailyDose: z.number(), unit: z.string() })),
    proposedAt: z.string(),
  }),
  'tapering.approved': taperingOutcome('approved'),
  'tapering.declined': taperingOutcome('declined'),
  'simulation.completed': z.object({
    simulationId: z.string(),
    cohortId: z.string().nullable().meta({ description: 'The cohort simulated; null for all of the employer\'s patients.' }),
    months: z.number().int().meta({ description: 'How many months were projected (the month-by-month rows are at GET /api/employer/simulations/{id}).' }),
    currency: z.string().length(3),
    totals,
    completedAt: z.string(),
  }),
  // Produced by the patients capability (POST /api/employer/upload-cohort): counts only.
  'cohort.uploaded': z.object({ cohortId: z.string(), received: z.number().int(), created: z.number().int(), updated: z.number().int(), unchanged: z.number().int() }),
  'authorization.reviewed': z.object({
    authorizationId: z.string(),
    patientId: z.string(),
    decision: z.enum(['approved', 'denied']),
    note: z.string().nullable(),
    reviewedBy: z.string().meta({ description: 'The reviewing user id, or the API key id when a key reviewed.' }),
    reviewedAt: z.string(),
  }),
  // Produced by the exports capability when a CSV export finishes: where to fetch it.
  'export.ready': z.object({
    exportId: z.string(),
    kind: z.enum(['csv', 'fhir']).meta({ description: 'csv: POST /api/employer/export/csv; fhir: a FHIR Bulk Data $export.' }),
    rowCount: z.number().int(),
    downloadUrl: z.string().meta({ description: 'The CSV download, or the Bulk Data status URL (its manifest lists the files).' }),
  }),
  'invoice.paid': z.object({
    invoiceId: z.string(),
    number: z.string(),
    ...money,
    period: z.object({ start: z.string(), end: z.string() }).meta({ description: 'Billing period, inclusive (YYYY-MM-DD).' }),
    paidAt: z.string(),
  }),
} satisfies Record<WebhookEventType, z.ZodObject>;

/**
 * Lists every webhook event type under `webhooks` in the OpenAPI document, with its body, an
 * operationId (`<eventInCamelCase>Webhook`, what a receiver's generated handler is named) and its
 * security: the signature the receiver verifies with the subscription's signing secret.
 */
export function registerWebhookPayloads(registry: OpenAPIRegistry): void {
  registry.registerComponent('securitySchemes', WEBHOOK_SIGNATURE_SCHEME, {
    type: 'apiKey',
    in: 'header',
    name: 'x-webhook-signature',
    description: '`sha256=<hex HMAC-SHA256 of the raw body>` keyed with the subscription\'s signing secret (plus the Standard Webhooks headers webhook-id, webhook-timestamp, webhook-signature). Receivers verify it; it is no credential the service accepts.',
  });
  for (const [event, data] of Object.entries(webhookDataSchemas)) {
    const name = event.replace(/\.(\w)/g, (_, letter: string) => letter.toUpperCase()).replace(/^\w/, (letter) => letter.toUpperCase());
    const body = z
      .object({
        id: z.uuid().meta({ description: 'The delivery id (also x-webhook-id): the same on every retry, for idempotency.' }),
        event: z.literal(event),
        timestamp: z.string().meta({ description: 'When the event occurred (ISO 8601).' }),
        apiVersion: z.string(),
        employerId: z.string(),
        data: data.meta({ id: `${name}Data` }),
      })
      .meta({ id: `${name}Webhook` });
    registry.registerWebhook({
      method: 'post',
      path: event,
      operationId: `${name.charAt(0).toLowerCase()}${name.slice(1)}Webhook`,
      security: [{ [WEBHOOK_SIGNATURE_SCHEME]: [] }],
      summary: `${event} delivery`,
      description:
        'POSTed to every active subscription of the employer listing this event type. Signed: `x-webhook-signature: sha256=<hex HMAC-SHA256 of the raw body>` ' +
        'keyed with the subscription\'s signing secret, plus Standard Webhooks headers. While a secret rotation\'s overlap lasts, x-webhook-signature is keyed with the ' +
        'previous secret, `x-webhook-signature-next` with the new one, and webhook-signature carries both (POST .../rotate-secret). Answer 2xx to acknowledge.',
      tags: ['Webhooks'],
      request: { body: { content: { 'application/json': { schema: body } } } },
      responses: { 200: { description: 'Any 2xx acknowledges the delivery; anything else is retried.' } },
    });
  }
}
