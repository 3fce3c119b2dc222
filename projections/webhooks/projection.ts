// Read model `webhook_subscriptions`: what the routes list and what fan-out and delivery check
// (status, url, sealed secret) before every attempt.
import { sql } from 'slonik';
import { WEBHOOK_EVENT_NAMES, type WebhookEvent } from '../../src/webhooks/events.ts';
import { defineProjection } from '../../src/event-store/projection.ts';

export const webhooksProjection = defineProjection<WebhookEvent>({
  name: 'webhooks',
  tables: ['webhook_subscriptions'],
  // Ping, redelivery and recovery requests change nothing the read model shows.
  eventTypes: WEBHOOK_EVENT_NAMES.filter((type) => type !== 'WebhookPingRequested' && type !== 'WebhookRedeliveryRequested' && type !== 'WebhookRecoveryRequested'),
  awaitedByCommands: true,
  async apply(tx, events) {
    for (const event of events) {
      const at = event.metadata.occurredAt;
      switch (event.type) {
        case 'WebhookSubscriptionCreated': {
          const d = event.data;
          await tx.query(sql.unsafe`
            INSERT INTO webhook_subscriptions (id, employer_id, url, events, description, status, max_failures, sealed_secret, created_at, updated_at)
            VALUES (${d.webhookId}, ${event.metadata.tenantId!}, ${d.url}, ${sql.array(d.events, 'text')}, ${d.description}, 'active',
                    ${d.maxFailures}, ${d.sealedSecret}, ${d.createdAt}, ${at})`);
          break;
        }
        case 'WebhookSubscriptionUpdated': {
          const c = event.data.changes;
          const assignments = [
            c.url === undefined ? null : sql.fragment`url = ${c.url}`,
            c.events === undefined ? null : sql.fragment`events = ${sql.array(c.events, 'text')}`,
            c.description === undefined ? null : sql.fragment`description = ${c.description}`,
            c.maxFailures === undefined ? null : sql.fragment`max_failures = ${c.maxFailures}`,
            sql.fragment`updated_at = ${at}`,
          ].filter((fragment) => fragment !== null);
          await tx.query(sql.unsafe`UPDATE webhook_subscriptions SET ${sql.join(assignments, sql.fragment`, `)} WHERE id = ${event.data.webhookId}`);
          break;
        }
        case 'WebhookSubscriptionDeactivated':
          await tx.query(sql.unsafe`
            UPDATE webhook_subscriptions SET status = 'inactive', disabled_reason = ${event.data.reason}, disabled_at = ${at}, updated_at = ${at} WHERE id = ${event.data.webhookId}`);
          break;
        case 'WebhookSubscriptionActivated':
          await tx.query(sql.unsafe`
            UPDATE webhook_subscriptions SET status = 'active', disabled_reason = NULL, disabled_at = NULL, failure_count = 0, updated_at = ${at} WHERE id = ${event.data.webhookId}`);
          break;
        case 'WebhookSubscriptionDeleted':
          await tx.query(sql.unsafe`DELETE FROM webhook_subscriptions WHERE id = ${event.data.webhookId}`);
          break;
        case 'WebhookSigningSecretRotated': {
          // The secret replaced stays, sealed, as the previous one while the overlap lasts.
          const overlapEndsAt = event.data.overlapEndsAt;
          await tx.query(sql.unsafe`
            UPDATE webhook_subscriptions
            SET previous_sealed_secret = ${overlapEndsAt === null ? null : sql.fragment`sealed_secret`}, sealed_secret = ${event.data.sealedSecret},
                secret_overlap_ends_at = ${overlapEndsAt}, updated_at = ${at}
            WHERE id = ${event.data.webhookId}`);
          break;
        }
        case 'WebhookSecretOverlapEnded':
          await tx.query(sql.unsafe`
            UPDATE webhook_subscriptions SET previous_sealed_secret = NULL, secret_overlap_ends_at = NULL, updated_at = ${at} WHERE id = ${event.data.webhookId}`);
          break;
        case 'WebhookDeliveryExhausted':
          await tx.query(sql.unsafe`
            UPDATE webhook_subscriptions SET failure_count = ${event.data.failureCount}, updated_at = ${at} WHERE id = ${event.data.webhookId}`);
          break;
        case 'WebhookFailureCountReset':
          await tx.query(sql.unsafe`UPDATE webhook_subscriptions SET failure_count = 0, updated_at = ${at} WHERE id = ${event.data.webhookId}`);
          break;
      }
    }
  },
});
