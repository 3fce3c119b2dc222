// The e-mail to an employer's administrators when a subscription was disabled by deliveries (its
// failure threshold reached, or the receiver answering 410 Gone): why, since when, and how to catch
// up. A job per WebhookSubscriptionDeactivated (the job dispatcher enqueues it once the event is
// committed); a manual deactivation sends nothing; a failed send is retried by graphile-worker.
import type { Task } from 'graphile-worker';
import type { AppContext } from '../app-context.ts';
import type { RecordedEvent } from '../event-store/port.ts';
import { eventOfJob, type EventJobPayload } from '../worker/dispatcher.ts';
import { adminEmailsOf } from '../../projections/tenants/queries.ts';
import { findWebhookTarget } from '../../projections/webhooks/queries.ts';
import type { WebhookEvent } from './events.ts';

export const DISABLED_MAIL_TASK = 'webhook-disabled-mail';

const REASONS = {
  failure_threshold: 'its deliveries kept failing: failureCount reached maxFailures',
  gone: 'the receiver answered 410 Gone, asking for deliveries to stop',
} as const;

export function disabledMailTask(ctx: AppContext): Task {
  return async (payload) => {
    const job = payload as EventJobPayload;
    const event = (await eventOfJob(ctx.eventStore, job)) as RecordedEvent<WebhookEvent> | undefined;
    if (!event || !job.tenantId) throw new Error(`event ${job.eventId} of ${job.streamName} not found`);
    if (event.type !== 'WebhookSubscriptionDeactivated' || event.data.reason === 'manual') return;
    const { webhookId, reason } = event.data;
    // Deleted since: nothing left to re-enable.
    const subscription = await findWebhookTarget(ctx.db.slonik, job.tenantId, webhookId);
    if (!subscription) return;
    const to = await adminEmailsOf(ctx.db.slonik, job.tenantId);
    if (to.length === 0) return void ctx.logger.warn({ employerId: job.tenantId, eventId: job.eventId }, 'no active admin to e-mail');
    const at = event.metadata.occurredAt;
    await ctx.mailer.send({
      to,
      subject: `Webhook subscription disabled: ${subscription.url}`,
      text: [
        `The webhook subscription ${webhookId} (${subscription.url}) was disabled at ${at}: ${REASONS[reason]}.`,
        `No delivery is attempted while it is disabled; the delivery with id ${event.data.deliveryId} was the last straw.`,
        '',
        'Once the receiver works again: re-enable the subscription, then send the failed deliveries again in their order',
        `("Recover" in the console, or POST /api/employer/webhooks/${webhookId}/recover with { "since": "<when the outage began>" }).`,
        `Console: ${ctx.config.PUBLIC_BASE_URL}/#/webhooks`,
      ].join('\n'),
      messageId: `<${event.eventId}@employer-integrations>`,
    });
  };
}
