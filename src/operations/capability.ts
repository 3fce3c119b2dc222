// Scheduled operational jobs (spec 4.7): integration alerts (hourly) and the API key inventory review
// (monthly on the 1st), on graphile-worker's crontab and as GET /api/cron/*; their e-mails to admins;
// and the daily retention job (retention.ts).
import type { Capability } from '../capability.ts';
import { operationsAuditMappers } from './audit.ts';
import { operationsEvents } from './events.ts';
import { cronRoutes } from './routes.ts';
import { ALERTS_TASK, MAIL_TASK, operationsTasks, RETENTION_TASK, REVIEW_TASK } from './tasks.ts';

export const operationsCapability: Capability = {
  name: 'operations',
  events: operationsEvents,
  routes: [cronRoutes()],
  auditMappers: operationsAuditMappers,
  consumers: [{ name: 'operations-mail', eventTypes: ['IntegrationAlertRaised', 'ApiKeyInventoryReviewed'], task: MAIL_TASK }],
  tasks: operationsTasks,
  crontab: [`0 * * * * ${ALERTS_TASK}`, `0 0 1 * * ${REVIEW_TASK}`, `15 4 * * * ${RETENTION_TASK}`],
};
