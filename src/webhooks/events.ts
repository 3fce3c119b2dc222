// Events of the webhook subscription aggregate (src/webhooks/subscription.ts), applied by
// projections/webhooks/.
import type { DomainEvent } from '../event-store/decider.ts';

export type WebhookStatus = 'active' | 'inactive';
/** Why a subscription became inactive: by PATCH, by reaching maxFailures, or a 410 Gone answer. */
export type DeactivationReason = 'manual' | 'failure_threshold' | 'gone';

export type WebhookSettings = { url: string; events: string[]; description: string | null; maxFailures: number };

export type WebhookSubscriptionCreated = DomainEvent<'WebhookSubscriptionCreated', WebhookSettings & { webhookId: string; sealedSecret: string; createdAt: string }>;
export type WebhookSubscriptionUpdated = DomainEvent<'WebhookSubscriptionUpdated', { webhookId: string; changes: Partial<WebhookSettings> }>;
export type WebhookSubscriptionDeactivated = DomainEvent<'WebhookSubscriptionDeactivated', { webhookId: string; reason: DeactivationReason; deliveryId: string | null }>;
/** Re-activation also resets failureCount. */
export type WebhookSubscriptionActivated = DomainEvent<'WebhookSubscriptionActivated', { webhookId: string }>;
export type WebhookSubscriptionDeleted = DomainEvent<'WebhookSubscriptionDeleted', { webhookId: string }>;
export type WebhookSigningSecretRotated = DomainEvent<'WebhookSigningSecretRotated', { webhookId: string; sealedSecret: string }>;
/** A delivery's final attempt failed. */
export type WebhookDeliveryExhausted = DomainEvent<'WebhookDeliveryExhausted', { webhookId: string; deliveryId: string; failureCount: number }>;
/** A delivery succeeded after earlier exhausted ones. */
export type WebhookFailureCountReset = DomainEvent<'WebhookFailureCountReset', { webhookId: string; deliveryId: string }>;
export type WebhookPingRequested = DomainEvent<'WebhookPingRequested', { webhookId: string }>;
export type WebhookRedeliveryRequested = DomainEvent<'WebhookRedeliveryRequested', { webhookId: string; deliveryId: string }>;

export type WebhookEvent =
  | WebhookSubscriptionCreated
  | WebhookSubscriptionUpdated
  | WebhookSubscriptionDeactivated
  | WebhookSubscriptionActivated
  | WebhookSubscriptionDeleted
  | WebhookSigningSecretRotated
  | WebhookDeliveryExhausted
  | WebhookFailureCountReset
  | WebhookPingRequested
  | WebhookRedeliveryRequested;

export const WEBHOOK_EVENT_NAMES = [
  'WebhookSubscriptionCreated',
  'WebhookSubscriptionUpdated',
  'WebhookSubscriptionDeactivated',
  'WebhookSubscriptionActivated',
  'WebhookSubscriptionDeleted',
  'WebhookSigningSecretRotated',
  'WebhookDeliveryExhausted',
  'WebhookFailureCountReset',
  'WebhookPingRequested',
  'WebhookRedeliveryRequested',
] as const satisfies readonly WebhookEvent['type'][];
