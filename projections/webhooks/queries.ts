// Subscriptions as the routes show them, each with its last delivery (read from the delivery log,
// src/webhooks/delivery-log.ts, in the same statement). Everything is scoped by employer: an id of
// another employer answers like an id that does not exist.
import type pg from 'pg';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { notFound } from '../../src/http/errors.ts';
import { pageOf, type Keyset } from '../../src/http/page.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../src/webhooks/events.ts';

export const webhookSubscription = z
  .object({
    id: z.string().meta({ example: 'whk_4f1c2b9d0e8a4c6f9b3d2e1a0c7b5d8e' }),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(['active', 'inactive']),
    disabledReason: z
      .enum(['manual', 'failure_threshold', 'gone'])
      .nullable()
      .meta({ description: 'Why an inactive subscription stopped: PATCH, failureCount reaching maxFailures, or the target answering 410 Gone.' }),
    disabledAt: z.string().nullable().meta({ description: 'Since when an inactive subscription is inactive; null while active.' }),
    signingSecretOverlapEndsAt: z.string().nullable().meta({
      description: 'While a secret rotation\'s overlap lasts, its end: until then deliveries are signed with the previous secret too ' +
        '(x-webhook-signature with the previous, x-webhook-signature-next with the new, webhook-signature with both). Null otherwise.',
    }),
    failureCount: z.number().int().meta({ description: 'Deliveries whose final attempt failed since the last success or re-activation.' }),
    maxFailures: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    lastDelivery: z
      .object({ id: z.string(), event: z.string(), status: z.enum(DELIVERY_STATUSES), statusCode: z.number().int().nullable(), createdAt: z.string() })
      .nullable(),
  })
  .meta({ id: 'WebhookSubscription' });
export type WebhookSubscriptionView = z.infer<typeof webhookSubscription>;

// The subscription reads are the API's hot read path: plain pg statements, named so that each
// connection parses them once (slonik's per-query work had cost as much as the rest of the
// request; `npm run bench -- read`).
type SubscriptionRow = {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  status: 'active' | 'inactive';
  disabled_reason: 'manual' | 'failure_threshold' | 'gone' | null;
  disabled_at: Date | null;
  overlap_ends_at: Date | null;
  failure_count: number;
  max_failures: number;
  created_at: Date;
  updated_at: Date;
  last_delivery_id: string | null;
  last_delivery_event: string | null;
  last_delivery_status: DeliveryStatus | null;
  last_delivery_status_code: number | null;
  last_delivery_at: Date | null;
  /** created_at to the microsecond, for the list's cursor. */
  cursor_at: string;
};

const selectSubscriptions = `
  SELECT s.id, s.url, s.events, s.description, s.status, s.disabled_reason, s.disabled_at,
         CASE WHEN s.secret_overlap_ends_at > now() THEN s.secret_overlap_ends_at END AS overlap_ends_at, s.failure_count, s.max_failures, s.created_at, s.updated_at,
         s.created_at::text AS cursor_at,
         d.delivery_id AS last_delivery_id, d.event_type AS last_delivery_event, d.status AS last_delivery_status,
         d.last_status_code AS last_delivery_status_code, d.created_at AS last_delivery_at
  FROM webhook_subscriptions s
  LEFT JOIN LATERAL (
    SELECT delivery_id, event_type, status, last_status_code, created_at FROM webhook_deliveries
    WHERE webhook_id = s.id ORDER BY created_at DESC, delivery_id DESC LIMIT 1
  ) d ON true`;

/** The statement behind GET /api/employer/webhooks: a page of `limit` rows and one more (is there a next page?). */
function listWebhooksStatement(employerId: string, page: { limit: number; after: Keyset | null }): pg.QueryConfig {
  return page.after
    ? {
        name: 'webhooks.list-after',
        text: `${selectSubscriptions} WHERE s.employer_id = $1 AND (s.created_at, s.id) > ($3::timestamptz, $4) ORDER BY s.created_at, s.id LIMIT $2`,
        values: [employerId, page.limit + 1, page.after.at, page.after.id],
      }
    : { name: 'webhooks.list', text: `${selectSubscriptions} WHERE s.employer_id = $1 ORDER BY s.created_at, s.id LIMIT $2`, values: [employerId, page.limit + 1] };
}

function toView(row: SubscriptionRow): WebhookSubscriptionView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    status: row.status,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at?.toISOString() ?? null,
    signingSecretOverlapEndsAt: row.overlap_ends_at?.toISOString() ?? null,
    failureCount: row.failure_count,
    maxFailures: row.max_failures,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    lastDelivery:
      row.last_delivery_id === null
        ? null
        : {
            id: row.last_delivery_id,
            event: row.last_delivery_event!,
            status: row.last_delivery_status!,
            statusCode: row.last_delivery_status_code,
            createdAt: row.last_delivery_at!.toISOString(),
          },
  };
}

export async function getWebhook(pool: pg.Pool, employerId: string, webhookId: string): Promise<WebhookSubscriptionView> {
  const { rows } = await pool.query<SubscriptionRow>({
    name: 'webhooks.get',
    text: `${selectSubscriptions} WHERE s.employer_id = $1 AND s.id = $2`,
    values: [employerId, webhookId],
  });
  if (!rows[0]) throw notFound('Webhook subscription');
  return toView(rows[0]);
}

/** One page of the employer's subscriptions, oldest first (index webhook_subscriptions_by_employer). */
export async function listWebhooks(
  pool: pg.Pool,
  employerId: string,
  page: { limit: number; after: Keyset | null },
): Promise<{ webhooks: WebhookSubscriptionView[]; next: Keyset | null }> {
  const { rows } = await pool.query<SubscriptionRow>(listWebhooksStatement(employerId, page));
  const { page: shown, next } = pageOf(rows, page.limit, (row) => ({ at: row.cursor_at, id: row.id }));
  return { webhooks: shown.map(toView), next };
}

/** The previous secret of subscription `s` while its overlap lasts (the database's clock decides), else NULL. */
export const previousSecretInOverlap = sql.fragment`CASE WHEN s.secret_overlap_ends_at > now() THEN s.previous_sealed_secret END`;

/** The url, status and sealed secrets the direct test needs. */
export async function findWebhookTarget(pool: CommonQueryMethods, employerId: string, webhookId: string) {
  const row = z.object({ url: z.string(), status: z.enum(['active', 'inactive']), sealed_secret: z.string(), previous_sealed_secret: z.string().nullable() });
  return pool.maybeOne(sql.type(row)`
    SELECT s.url, s.status, s.sealed_secret, ${previousSecretInOverlap} AS previous_sealed_secret
    FROM webhook_subscriptions s WHERE s.employer_id = ${employerId} AND s.id = ${webhookId}`);
}
