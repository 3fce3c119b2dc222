// The graphile-worker runner: capability tasks by name, in the service's own database.
//
// graphile-worker shuts its worker pool down for good when it cannot record a finished job (a
// database outage while a job completes: "Could not completeJobs; queue is in an inconsistent
// state"), so after an outage the process would run no job again. The runner is therefore
// supervised: when it stops without being asked to, the jobs its pool had locked are unlocked
// (`force_unlock_workers`: that pool is gone, so they run again, as at-least-once allows) and a new
// runner starts, retried every second until the database answers.
import { EventEmitter } from 'node:events';
import { run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { silentWorkerLogger } from '../db/migrate.ts';

export type WorkerRunner = { stop(): Promise<void> };

const RESTART_DELAY_MS = 1000;

/** Jobs one worker process runs at a time. */
export const WORKER_CONCURRENCY = 16;

export async function startWorker(deps: {
  pgPool: pg.Pool;
  tasks: TaskList;
  concurrency?: number;
  /** Told when the runner stopped by itself and is being replaced. */
  onRestart?: (reason: unknown) => void;
  crontab?: string;
}): Promise<WorkerRunner> {
  let stopping = false;
  let current: Runner;
  /** Whether `current` has stopped by itself (stopping it again would throw). */
  let currentStopped = false;

  const start = async (): Promise<Runner> => {
    const events: WorkerEvents = new EventEmitter();
    const poolIds: string[] = [];
    events.on('pool:create', ({ workerPool }) => poolIds.push(workerPool.id));
    const runner = await run({
      // graphile-worker's scheduler: each slot is claimed once across worker processes (known_crontabs).
      ...(deps.crontab ? { crontab: deps.crontab } : {}),
      pgPool: deps.pgPool,
      taskList: deps.tasks,
      concurrency: deps.concurrency ?? WORKER_CONCURRENCY,
      noHandleSignals: true,
      pollInterval: 2000,
      logger: silentWorkerLogger(),
      events,
      // Fetch and lock jobs in batches, and complete them in batches, instead of one round trip each.
      preset: { worker: { localQueue: { size: 32 }, completeJobBatchDelay: 0 } },
    });
    const stoppedBy = (reason: unknown) => {
      if (runner === current) currentStopped = true;
      return replace(poolIds, reason);
    };
    runner.promise.then(() => stoppedBy('the worker pool stopped'), stoppedBy);
    return runner;
  };

  const replace = async (deadPoolIds: string[], reason: unknown) => {
    if (stopping) return;
    deps.onRestart?.(reason);
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
      if (stopping) return;
      try {
        await deps.pgPool.query('SELECT graphile_worker.force_unlock_workers($1::text[])', [deadPoolIds]);
        current = await start();
        currentStopped = false;
        if (stopping) await current.stop(); // asked to stop while this one was starting
        return;
      } catch {
        // The database is still unavailable: try again.
      }
    }
  };

  current = await start();
  return {
    async stop() {
      stopping = true;
      if (!currentStopped) await current.stop();
    },
  };
}
