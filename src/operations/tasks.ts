// The operations capability's graphile-worker tasks:
// - integration-alerts (hourly) and api-key-inventory-review (monthly): the scheduled jobs (jobs.ts);
// - retention (daily): prunes operational rows past their age (retention.ts);
// - operations-mail: e-mails the employer's admins about a recorded alert or a flagged inventory
//   review. A job per event (the job dispatcher enqueues it once the event is committed): a failed send
//   throws, and graphile-worker retries it with backoff, while the audit record stands already.
import type { Task, TaskList } from 'graphile-worker';
import type { AppContext } from '../app-context.ts';
import { eventOfJob, type EventJobPayload } from '../worker/dispatcher.ts';
import type { InventoryReviewData, IpRejectionAlertData } from './events.ts';
import { inventoryReviewData, ipRejectionAlertData } from './events.ts';
import { adminEmailsOf } from '../../projections/tenants/queries.ts';
import { runIntegrationAlerts, runInventoryReview } from './jobs.ts';
import { runRetention } from './retention.ts';

export const ALERTS_TASK = 'integration-alerts';
export const REVIEW_TASK = 'api-key-inventory-review';
export const MAIL_TASK = 'operations-mail';
export const RETENTION_TASK = 'retention';

export function operationsTasks(ctx: AppContext): TaskList {
  return {
    [ALERTS_TASK]: async () => void ctx.logger.info(await runIntegrationAlerts(ctx, new Date()), 'integration alerts run'),
    [REVIEW_TASK]: async () => void ctx.logger.info(await runInventoryReview(ctx, new Date()), 'API key inventory review run'),
    [MAIL_TASK]: mailTask(ctx),
    [RETENTION_TASK]: async () => void (await runRetention(ctx)),
  };
}

function mailTask(ctx: AppContext): Task {
  return async (payload) => {
    const job = payload as EventJobPayload;
    const event = await eventOfJob(ctx.eventStore, job);
    if (!event || !job.tenantId) throw new Error(`event ${job.eventId} of ${job.streamName} not found`);
    const content = event.type === 'IntegrationAlertRaised' ? alertMail(ipRejectionAlertData.parse(event.data))
      : event.type === 'ApiKeyInventoryReviewed' ? reviewMail(inventoryReviewData.parse(event.data))
      : null;
    if (!content) return;
    const to = await adminEmailsOf(ctx.db.slonik, job.tenantId);
    if (to.length === 0) return void ctx.logger.warn({ employerId: job.tenantId, eventId: job.eventId }, 'no active admin to e-mail');
    await ctx.mailer.send({ to, ...content, messageId: `<${event.eventId}@employer-integrations>` });
  };
}

function alertMail(data: IpRejectionAlertData) {
  const lines = data.sources.map((source) => `  ${source.rejections} from ${source.ip} with key ${source.keyName ?? '(unknown)'} (${source.keyId})`);
  return {
    subject: `API key calls refused: ${data.rejections} from addresses outside the allowlist in the last hour`,
    text: [
      `${data.rejections} API key calls were refused with API_KEY_IP_NOT_ALLOWED between ${data.windowStart} and ${data.windowEnd} (alert threshold: ${data.threshold}).`,
      '',
      'By key and address:',
      ...lines,
      '',
      "If these addresses are yours, add them to the key's allowlist; if not, consider revoking the key.",
    ].join('\n'),
  };
}

function reviewMail(data: InventoryReviewData) {
  if (!data.flagged) return null;
  const keyLine = (key: { name: string; keyId: string; lastUsedAt: string | null; expiresAt: string | null }) =>
    `  ${key.name} (${key.keyId}): last used ${key.lastUsedAt ?? 'never'}${key.expiresAt ? `, expires ${key.expiresAt}` : ''}`;
  return {
    subject: `API key inventory review ${data.month}: action needed`,
    text: [
      `Active API keys: ${data.activeKeys} (expected ${data.expectedMin} to ${data.expectedMax}${data.countOutOfBounds ? `: ${data.countOutOfBounds} the range` : ''}).`,
      ...(data.staleKeys.length > 0 ? ['', `Unused for ${data.staleDays} days or more:`, ...data.staleKeys.map(keyLine)] : []),
      ...(data.expiringKeys.length > 0 ? ['', `Expiring within ${data.expiringDays} days:`, ...data.expiringKeys.map(keyLine)] : []),
    ].join('\n'),
  };
}
