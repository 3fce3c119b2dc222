// The graphile-worker runner: capability tasks by name, in the service's own database.
import { run, type Runner, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import { silentWorkerLogger } from '../db/migrate.ts';

export async function startWorker(deps: { pgPool: pg.Pool; tasks: TaskList; concurrency?: number; crontab?: string[] }): Promise<Runner> {
  return run({
    pgPool: deps.pgPool,
    taskList: deps.tasks,
    ...(deps.crontab?.length ? { crontab: deps.crontab.join('\n') } : {}),
    concurrency: deps.concurrency ?? 16,
    noHandleSignals: true,
    pollInterval: 2000,
    logger: silentWorkerLogger(),
    // Fetch and lock jobs in batches, and complete them in batches, instead of one round trip each.
    preset: { worker: { localQueue: { size: 32 }, completeJobBatchDelay: 0 } },
  });
}
