// Outbound webhooks: subscriptions (routes, decider, read model), fan-out of committed domain events
// to deliveries, signed at-least-once delivery with retries, the delivery log and auto-disable.
import { webhooksProjection } from '../../projections/webhooks/projection.ts';
import type { Capability } from '../capability.ts';
import { webhookAuditMappers } from './audit.ts';
import { DISABLED_MAIL_TASK, disabledMailTask } from './disabled-mail.ts';
import { webhookEventMappings, type WebhookEventMappings } from './event-types.ts';
import { webhookDeliveryRoutes } from './routes/deliveries.ts';
import { webhookRecoveryRoutes } from './routes/recovery.ts';
import { webhookSigningSecretRoutes } from './routes/signing-secret.ts';
import { webhookSubscriptionRoutes } from './routes/subscriptions.ts';
import { createWebhookRuntime, type WebhookRuntime } from './runtime.ts';
import { FAN_OUT_TASK, webhookTasks } from './tasks.ts';
import { webhookEvents } from './events.ts';
import { registerWebhookPayloads } from './payloads.ts';

export type WebhooksCapabilityOptions = {
  /**
   * Extra trusted CA certificate(s) in PEM for webhook targets, for tests whose receiver has a
   * self-signed certificate. Production leaves it unset: node's roots plus NODE_EXTRA_CA_CERTS.
   */
  ca?: string | string[];
  /** Which domain events become webhooks; the service's list by default. */
  eventMappings?: WebhookEventMappings;
};

export function createWebhooksCapability(options: WebhooksCapabilityOptions = {}): Capability<WebhookRuntime> {
  const mappings = options.eventMappings ?? webhookEventMappings;
  return {
    name: 'webhooks',
    events: webhookEvents,
    routes: [webhookSubscriptionRoutes, webhookSigningSecretRoutes, webhookDeliveryRoutes, webhookRecoveryRoutes],
    projections: [webhooksProjection],
    auditMappers: webhookAuditMappers,
    consumers: [
      { name: 'webhooks-fan-out', eventTypes: Object.keys(mappings), task: FAN_OUT_TASK },
      // The administrators hear of a subscription that deliveries disabled.
      { name: 'webhook-disabled-mail', eventTypes: ['WebhookSubscriptionDeactivated'], task: DISABLED_MAIL_TASK },
    ],
    tasks: (ctx, lease, runtime) => ({ ...webhookTasks(ctx, runtime, lease, mappings), [DISABLED_MAIL_TASK]: disabledMailTask(ctx) }),
    start: async (ctx) => {
      const runtime = createWebhookRuntime(ctx, { ...(options.ca === undefined ? {} : { ca: options.ca }) });
      registerWebhookPayloads(ctx.openapi);
      return { services: runtime, stop: runtime.stop };
    },
  };
}

export const webhooksCapability = createWebhooksCapability();
