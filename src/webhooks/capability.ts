// Outbound webhooks: subscriptions (routes, decider, read model), fan-out of committed domain events
// to deliveries, signed at-least-once delivery with retries, the delivery log and auto-disable.
import { webhooksProjection } from '../../projections/webhooks/projection.ts';
import type { AppContext } from '../app-context.ts';
import type { Capability } from '../capability.ts';
import { webhookAuditMappers } from './audit.ts';
import { webhookEventMappings, type WebhookEventMappings } from './event-types.ts';
import { webhookRoutes } from './routes.ts';
import { createWebhookRuntime, type WebhookRuntime } from './runtime.ts';
import { FAN_OUT_TASK, webhookTasks } from './worker-tasks.ts';

export type WebhooksCapabilityOptions = {
  /**
   * Extra trusted CA certificate(s) in PEM for webhook targets, for tests whose receiver has a
   * self-signed certificate. Production leaves it unset: node's roots plus NODE_EXTRA_CA_CERTS.
   */
  ca?: string | string[];
  /** Which domain events become webhooks; the service's list by default. */
  eventMappings?: WebhookEventMappings;
};

export function createWebhooksCapability(options: WebhooksCapabilityOptions = {}): Capability {
  const mappings = options.eventMappings ?? webhookEventMappings;
  // One runtime per running service (a test process may run several).
  const runtimes = new WeakMap<AppContext, WebhookRuntime>();
  const runtimeOf = (ctx: AppContext) => {
    const runtime = runtimes.get(ctx);
    if (!runtime) throw new Error('webhooks capability used before its setup');
    return runtime;
  };
  return {
    name: 'webhooks',
    routes: [webhookRoutes(runtimeOf)],
    projections: [webhooksProjection],
    auditMappers: webhookAuditMappers,
    consumers: [{ name: 'webhooks-fan-out', eventTypes: Object.keys(mappings), task: FAN_OUT_TASK }],
    tasks: (ctx) => webhookTasks(ctx, runtimeOf(ctx), mappings),
    setup: async (ctx) => {
      const runtime = createWebhookRuntime(ctx, { ...(options.ca === undefined ? {} : { ca: options.ca }) });
      runtimes.set(ctx, runtime);
      ctx.shutdownHooks.push(runtime.stop);
    },
  };
}

export const webhooksCapability = createWebhooksCapability();
