// Audit records of subscription changes. Delivery outcomes are in the delivery log instead, except
// the ones that change the subscription (auto-disable shows as webhook.deactivate, reason failure_threshold).
import type { AuditMappers } from '../capability.ts';

const target = (data: Record<string, unknown>) => ({ targetType: 'webhook', targetId: String(data.webhookId) });

export const webhookAuditMappers: AuditMappers = {
  WebhookSubscriptionCreated: (event) => ({ action: 'webhook.create', ...target(event.data), details: { url: event.data.url, events: event.data.events } }),
  WebhookSubscriptionUpdated: (event) => ({ action: 'webhook.update', ...target(event.data), details: { fields: Object.keys(event.data.changes as object) } }),
  WebhookSubscriptionDeactivated: (event) => ({ action: 'webhook.deactivate', ...target(event.data), details: { reason: event.data.reason } }),
  WebhookSubscriptionActivated: (event) => ({ action: 'webhook.activate', ...target(event.data) }),
  WebhookSubscriptionDeleted: (event) => ({ action: 'webhook.delete', ...target(event.data) }),
  WebhookSigningSecretRotated: (event) => ({ action: 'webhook.secret.rotate', ...target(event.data), details: { overlapEndsAt: event.data.overlapEndsAt } }),
  WebhookSecretOverlapEnded: (event) => ({ action: 'webhook.secret.overlap_end', ...target(event.data) }),
  WebhookPingRequested: (event) => ({ action: 'webhook.ping', ...target(event.data) }),
  WebhookRecoveryRequested: (event) => ({
    action: 'webhook.recover',
    ...target(event.data),
    details: { recoveryId: event.data.recoveryId, since: event.data.since },
  }),
  WebhookRedeliveryRequested: (event) => ({ action: 'webhook.delivery.redeliver', ...target(event.data), details: { deliveryId: event.data.deliveryId } }),
};
