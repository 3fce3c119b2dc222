// Scheduled operational jobs (spec 4.7): integration alerts (hourly) and the API key inventory review
// (monthly on the 1st), on graphile-worker's crontab and as GET /api/cron/*; their e-mails to admins.
import type { Capability } from '../capability.ts';
import { operationsEvents } from './events.ts';
import { runIntegrationAlerts, runInventoryReview } from './jobs.ts';
import { MAIL_TASK, mailTask } from './mail-task.ts';
import { cronRoutes } from './routes.ts';

const ALERTS_TASK = 'integration-alerts';
const REVIEW_TASK = 'api-key-inventory-review';

export const operationsCapability: Capability = {
  name: 'operations',
  events: operationsEvents,
  routes: [cronRoutes()],
  auditMappers: {
    IntegrationAlertRaised: (event) => ({
      action: 'integration.alert.ip_rejections',
      targetType: 'employer',
      targetId: String(event.metadata.tenantId),
      details: { hour: event.data.hour, rejections: event.data.rejections, threshold: event.data.threshold, sources: event.data.sources },
    }),
    ApiKeyInventoryReviewed: (event) => ({
      action: 'api_key.inventory_review',
      targetType: 'employer',
      targetId: String(event.metadata.tenantId),
      details: event.data,
    }),
  },
  consumers: [{ name: 'operations-mail', eventTypes: ['IntegrationAlertRaised', 'ApiKeyInventoryReviewed'], task: MAIL_TASK }],
  tasks: (ctx) => ({
    [ALERTS_TASK]: async () => void ctx.logger.info(await runIntegrationAlerts(ctx, new Date()), 'integration alerts run'),
    [REVIEW_TASK]: async () => void ctx.logger.info(await runInventoryReview(ctx, new Date()), 'API key inventory review run'),
    [MAIL_TASK]: mailTask(ctx),
  }),
  crontab: [`0 * * * * ${ALERTS_TASK}`, `0 0 1 * * ${REVIEW_TASK}`],
};
