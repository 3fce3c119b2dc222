// Commands on webhook subscriptions, from the routes and from the delivery worker. Whenever a
// subscription stops (deactivated or deleted), its pending deliveries are cancelled right after.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { encryptSecret } from '../crypto/secret-box.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { notFound } from '../http/errors.ts';
import { cancelPendingDeliveries, requeueDelivery, startRecovery } from './deliveries.ts';
import { findDeliveryStatus } from './delivery-log.ts';
import { unknownWebhookEvents, WEBHOOK_EVENT_TYPES } from './event-types.ts';
import { assertSafeTargetUrl, UnsafeTargetError } from '../net/safe-target.ts';
import { generateSigningSecret } from './signing.ts';
import type { WebhookSettings, WebhookStatus } from './events.ts';
import { REQUESTED_DELIVERY, withRequestedDelivery } from './requested-deliveries.ts';
import { webhookDecider, webhookStream, type WebhookCommand } from './subscription.ts';

/** Who records delivery outcomes in the event history. */
export const DELIVERY_WORKER_ACTOR = { type: 'system', id: 'webhook-delivery' } as const;

export function newWebhookId(): string {
  return `whk_${randomUUID().replaceAll('-', '')}`;
}

async function runWebhookCommand(ctx: AppContext, context: CommandContext, webhookId: string, command: WebhookCommand) {
  const result = await handleCommand(ctx.commands, { streamName: webhookStream(employerOf(context), webhookId), decider: webhookDecider, command, context });
  if (result.newEvents.some((event) => event.type === 'WebhookSubscriptionDeactivated' || event.type === 'WebhookSubscriptionDeleted')) {
    await cancelPendingDeliveries(ctx.db.slonik, webhookId);
  }
  return result;
}

/**
 * 400 for a URL that is not https or whose host is not public (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS);
 * the latter says only TARGET_NOT_ALLOWED, whatever the host resolved to.
 */
async function checkedUrl(ctx: AppContext, url: string): Promise<string> {
  try {
    await assertSafeTargetUrl(url, { allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS, logger: ctx.logger });
    return url;
  } catch (error) {
    if (error instanceof UnsafeTargetError) throw new DomainError('invalid', 'INVALID_WEBHOOK_URL', error.message);
    throw error;
  }
}

function checkedEvents(events: string[]): string[] {
  const unknown = unknownWebhookEvents(events);
  if (unknown.length > 0) {
    throw new DomainError('invalid', 'UNKNOWN_WEBHOOK_EVENT', `Unknown webhook event type(s): ${unknown.join(', ')}.`, {
      unknownEvents: unknown,
      availableEvents: [...WEBHOOK_EVENT_TYPES],
    });
  }
  return [...new Set(events)];
}

function sealSecret(ctx: AppContext, webhookId: string): { signingSecret: string; sealedSecret: string } {
  const signingSecret = generateSigningSecret();
  return { signingSecret, sealedSecret: encryptSecret(signingSecret, ctx.encryptionKey, webhookId) };
}

/** Returns the new id and the signing secret in clear (shown once, stored only sealed). */
export async function createWebhook(ctx: AppContext, context: CommandContext, settings: WebhookSettings) {
  const webhookId = newWebhookId();
  const url = await checkedUrl(ctx, settings.url);
  const events = checkedEvents(settings.events);
  const { signingSecret, sealedSecret } = sealSecret(ctx, webhookId);
  await runWebhookCommand(ctx, context, webhookId, {
    type: 'CreateWebhook',
    webhookId,
    url,
    events,
    description: settings.description,
    maxFailures: settings.maxFailures,
    sealedSecret,
    now: new Date().toISOString(),
  });
  return { webhookId, signingSecret };
}

export async function updateWebhook(
  ctx: AppContext,
  context: CommandContext,
  input: Partial<WebhookSettings> & { webhookId: string; status?: WebhookStatus },
) {
  const { webhookId, status, ...changes } = input;
  if (changes.url !== undefined) changes.url = await checkedUrl(ctx, changes.url);
  if (changes.events !== undefined) changes.events = checkedEvents(changes.events);
  await runWebhookCommand(ctx, context, webhookId, { type: 'UpdateWebhook', changes, ...(status ? { status } : {}) });
}

export async function deleteWebhook(ctx: AppContext, context: CommandContext, input: { webhookId: string }) {
  await runWebhookCommand(ctx, context, input.webhookId, { type: 'DeleteWebhook' });
}

/** How long the previous secret keeps signing after a rotation unless the caller chooses: 24 h; 7 days at most. */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 24 * 3600;
export const MAX_SECRET_OVERLAP_SECONDS = 7 * 24 * 3600;

/**
 * The new secret in clear, shown once, and the overlap's end (null for overlapSeconds 0). Attempts
 * from now on, retries included, are signed with it, and with the previous one until the overlap ends.
 */
export async function rotateSigningSecret(
  ctx: AppContext,
  context: CommandContext,
  input: { webhookId: string; overlapSeconds: number },
): Promise<{ signingSecret: string; overlapEndsAt: string | null }> {
  const { signingSecret, sealedSecret } = sealSecret(ctx, input.webhookId);
  const now = Date.now();
  const overlapEndsAt = input.overlapSeconds === 0 ? null : new Date(now + input.overlapSeconds * 1000).toISOString();
  await runWebhookCommand(ctx, context, input.webhookId, { type: 'RotateSigningSecret', sealedSecret, overlapEndsAt, now: new Date(now).toISOString() });
  return { signingSecret, overlapEndsAt };
}

/** Ends a rotation's overlap now: the previous secret signs nothing more. Nothing to do when none lasts. */
export async function endSecretOverlap(ctx: AppContext, context: CommandContext, input: { webhookId: string }) {
  await runWebhookCommand(ctx, context, input.webhookId, { type: 'EndSecretOverlap', now: new Date().toISOString() });
}

/** A test.ping through the queue (fan-out, retries, delivery log), unlike the direct POST .../test; a requested delivery. */
export async function requestPing(ctx: AppContext, context: CommandContext, input: { webhookId: string }) {
  await withRequestedDelivery(ctx, employerOf(context), () => runWebhookCommand(ctx, context, input.webhookId, { type: 'RequestPing' }));
}

/** Sends a finished delivery again, same delivery id, with a fresh series of retries. */
export async function redeliver(ctx: AppContext, context: CommandContext, input: { webhookId: string; deliveryId: string }) {
  const { webhookId, deliveryId } = input;
  const status = await findDeliveryStatus(ctx.db.slonik, employerOf(context), webhookId, deliveryId);
  if (status === null) throw notFound('Delivery');
  if (status === 'pending') throw new DomainError('conflict', 'DELIVERY_PENDING', 'The delivery is still pending; it will be attempted again on its own.');
  const employerId = employerOf(context);
  await withRequestedDelivery(ctx, employerId, async () => {
    await runWebhookCommand(ctx, context, webhookId, { type: 'RequestRedelivery', deliveryId });
    if (!(await requeueDelivery(ctx.db.slonik, { employerId, deliveryId, admittedAs: REQUESTED_DELIVERY }))) {
      throw new DomainError('conflict', 'DELIVERY_PENDING', 'The delivery is already pending again.');
    }
  });
}

/**
 * Sends every failed delivery since `since` again (its original order, one at a time), after an
 * outage. Returns the recovery's id and how many deliveries it took; recorded (and audited) first.
 */
export async function recoverDeliveries(ctx: AppContext, context: CommandContext, input: { webhookId: string; since: string }) {
  const recoveryId = randomUUID();
  await runWebhookCommand(ctx, context, input.webhookId, { type: 'RequestRecovery', recoveryId, since: input.since });
  const total = await startRecovery(ctx.db.slonik, { recoveryId, employerId: employerOf(context), webhookId: input.webhookId, since: input.since });
  return { recoveryId, total };
}

/** What the delivery worker records acts as the worker, caused by the delivery. */
export function deliveryWorkerContext(delivery: { employerId: string; deliveryId: string }): CommandContext {
  return { tenantId: delivery.employerId, actor: DELIVERY_WORKER_ACTOR, causationId: delivery.deliveryId };
}

/** Outcomes the delivery worker records on the subscription (failure count, auto-disable, 410 Gone). */
export async function recordDeliveryOutcome(
  ctx: AppContext,
  context: CommandContext,
  input: { outcome: 'succeeded' | 'exhausted' | 'gone'; webhookId: string; deliveryId: string },
) {
  const { outcome, webhookId, deliveryId } = input;
  const type = outcome === 'succeeded' ? 'RecordDeliverySucceeded' : outcome === 'exhausted' ? 'RecordDeliveryExhausted' : 'RecordTargetGone';
  await runWebhookCommand(ctx, context, webhookId, { type, deliveryId });
}
