// Events of the webhook subscription aggregate (src/webhooks/subscription.ts), applied by
// projections/webhooks/.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

export type WebhookStatus = 'active' | 'inactive';

/**
 * The statuses of a delivery in the delivery log (./deliveries.ts): WebhookDeliveryExhausted records
 * one that ended `failed`, and the subscription read model shows its last delivery's status.
 */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const webhookSettings = z.object({ url: z.string(), events: z.array(z.string()), description: z.string().nullable(), maxFailures: z.number().int() });
export type WebhookSettings = z.infer<typeof webhookSettings>;

const webhookSubscriptionCreated = eventSchema('WebhookSubscriptionCreated', webhookSettings.extend({
  webhookId: z.string(),
  sealedSecret: z.string(),
  createdAt: z.string(),
}));
const webhookSubscriptionUpdated = eventSchema('WebhookSubscriptionUpdated', z.object({ webhookId: z.string(), changes: webhookSettings.partial() }));
/**
 * Why a subscription became inactive: by PATCH (manual), by reaching maxFailures, or a 410 Gone answer.
 * Version 2: the delivery that caused a deactivation travels only with the causes that have one
 * (version 1 had `deliveryId: string | null` on every reason, null for a manual deactivation).
 */
const webhookSubscriptionDeactivated = eventSchema(
  'WebhookSubscriptionDeactivated',
  // Strict: a manual deactivation has no delivery, not even a null one.
  z.discriminatedUnion('reason', [
    z.strictObject({ webhookId: z.string(), reason: z.literal('manual') }),
    z.strictObject({ webhookId: z.string(), reason: z.enum(['failure_threshold', 'gone']), deliveryId: z.string() }),
  ]),
  {
    version: 2,
    upcasters: { 1: ({ deliveryId, ...data }) => (data.reason === 'manual' ? data : { ...data, deliveryId }) },
  },
);
/** Re-activation also resets failureCount. */
const webhookSubscriptionActivated = eventSchema('WebhookSubscriptionActivated', z.object({ webhookId: z.string() }));
const webhookSubscriptionDeleted = eventSchema('WebhookSubscriptionDeleted', z.object({ webhookId: z.string() }));
/**
 * Version 2: `overlapEndsAt`, until when the previous secret still signs deliveries beside the new one
 * (src/webhooks/signing.ts); null for a replacement at once, as every version 1 rotation was.
 */
const webhookSigningSecretRotated = eventSchema(
  'WebhookSigningSecretRotated',
  z.object({ webhookId: z.string(), sealedSecret: z.string(), overlapEndsAt: z.string().nullable() }),
  { version: 2, upcasters: { 1: (data) => ({ ...data, overlapEndsAt: null }) } },
);
/** An administrator ended a rotation's overlap before its end: the previous secret signs nothing more. */
const webhookSecretOverlapEnded = eventSchema('WebhookSecretOverlapEnded', z.object({ webhookId: z.string() }));
/** A delivery's final attempt failed. */
const webhookDeliveryExhausted = eventSchema('WebhookDeliveryExhausted', z.object({ webhookId: z.string(), deliveryId: z.string(), failureCount: z.number().int() }));
/** A delivery succeeded after earlier exhausted ones. */
const webhookFailureCountReset = eventSchema('WebhookFailureCountReset', z.object({ webhookId: z.string(), deliveryId: z.string() }));
const webhookPingRequested = eventSchema('WebhookPingRequested', z.object({ webhookId: z.string() }));
const webhookRedeliveryRequested = eventSchema('WebhookRedeliveryRequested', z.object({ webhookId: z.string(), deliveryId: z.string() }));
/** Every failed delivery since `since` is to be sent again, in order, one at a time (src/webhooks/deliveries.ts startRecovery). */
const webhookRecoveryRequested = eventSchema('WebhookRecoveryRequested', z.object({ webhookId: z.string(), recoveryId: z.string(), since: z.string() }));

export const webhookEvents = [
  webhookSubscriptionCreated,
  webhookSubscriptionUpdated,
  webhookSubscriptionDeactivated,
  webhookSubscriptionActivated,
  webhookSubscriptionDeleted,
  webhookSigningSecretRotated,
  webhookSecretOverlapEnded,
  webhookDeliveryExhausted,
  webhookFailureCountReset,
  webhookPingRequested,
  webhookRedeliveryRequested,
  webhookRecoveryRequested,
] as const;

export type WebhookEvent = EventOf<(typeof webhookEvents)[number]>;
export const WEBHOOK_EVENT_NAMES: readonly WebhookEvent['type'][] = webhookEvents.map((schema) => schema.type);
