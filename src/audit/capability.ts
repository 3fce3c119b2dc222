// The audit trail: the audit API and public key, and the job that signs a checkpoint of every chain
// with unsigned events every 10 minutes (the audit-chain projection signs every 1,000 events itself).
import { signDueCheckpoints } from '../../projections/audit-chain/projection.ts';
import type { Capability } from '../capability.ts';
import { auditRoutes } from './routes.ts';

const CHECKPOINT_TASK = 'audit-checkpoints';

export const auditCapability: Capability = {
  name: 'audit',
  routes: [auditRoutes()],
  tasks: (ctx) => ({
    [CHECKPOINT_TASK]: async () => {
      const signed = await signDueCheckpoints(ctx.db.slonik, ctx.auditSigner);
      if (signed > 0) ctx.logger.info({ checkpoints: signed }, 'audit chain checkpoints signed');
    },
  }),
  crontab: [`*/10 * * * * ${CHECKPOINT_TASK}`],
};
