// The audit capability's graphile-worker task: every 10 minutes, a signed checkpoint of every chain with
// unsigned events (the audit-chain projection signs every 1,000 events itself).
import type { TaskList } from 'graphile-worker';
import { signDueCheckpoints } from '../../projections/audit-chain/projection.ts';
import type { AppContext } from '../app-context.ts';

export const CHECKPOINT_TASK = 'audit-checkpoints';

export function auditTasks(ctx: AppContext): TaskList {
  return {
    [CHECKPOINT_TASK]: async () => {
      const signed = await signDueCheckpoints(ctx.db.slonik, ctx.auditSigner);
      if (signed > 0) ctx.logger.info({ checkpoints: signed }, 'audit chain checkpoints signed');
    },
  };
}
