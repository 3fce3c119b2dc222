// The audit trail: the audit API and public key, and the job that signs a checkpoint of every chain
// with unsigned events every 10 minutes (the audit-chain projection signs every 1,000 events itself).
import type { Capability } from '../capability.ts';
import { auditRoutes } from './routes.ts';
import { auditTasks, CHECKPOINT_TASK } from './tasks.ts';

export const auditCapability: Capability = {
  name: 'audit',
  routes: [auditRoutes()],
  tasks: auditTasks,
  crontab: [`*/10 * * * * ${CHECKPOINT_TASK}`],
};
