// The graphile-worker runner: capability tasks by name, in the service's own database.
//
// graphile-worker shuts its worker pool down for good when it cannot record a finished job (a
// database outage while a job completes: "Could not completeJobs; queue is in an inconsistent
// state"), so after an outage the process would run no job again. The runner is therefore
// supervised: when it stops without being asked to, the jobs its pool had locked are unlocked
// (`force_unlock_workers`: that pool is gone, so they run again, as at-least-once allows) and a new
// runner starts, retried every second until the database answers.
//
// A runner can also stay up and never fetch a job again: graphile-worker (0.18) registers the task
// names once per runner and keeps that promise, so when the first registration fails (no connection
// within the pool's wait, at a busy start-up) every later fetch fails with the same cached error. A
// runner whose fetches keep failing is therefore replaced too.
//
// Employers share the workers fairly (./fair-share.ts): each worker fetches its own next job, leaving
// alone the jobs of employers that already have their share of this process's workers running. So
// there is no local queue of prefetched jobs: a job fetched in a batch would run whoever else waits.
import { EventEmitter } from 'node:events';
import { Logger as WorkerLogger, run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { createEmployerShares } from './fair-share.ts';

export type WorkerRunner = { stop(): Promise<void> };

const RESTART_DELAY_MS = 1000;
/** Rounds of fetches (every worker fetching once a poll interval, 2 s) failing in a row before the runner is replaced. */
const FAILED_FETCH_ROUNDS_BEFORE_RESTART = 3;
const FETCH_FAILED = 'Error occurred fetching jobs';

/** Jobs one worker process runs at a time. */
export const WORKER_CONCURRENCY = 16;

export async function startWorker(deps: {
  pgPool: pg.Pool;
  tasks: TaskList;
  concurrency?: number;
  /** Jobs of one employer this process runs at a time (WORKER_JOBS_PER_EMPLOYER); all of them by default. */
  jobsPerEmployer?: number;
  /** Told when the runner stopped by itself, or could fetch no job, and is being replaced. */
  onRestart?: (reason: unknown) => void;
  /** Where graphile-worker's own errors go (its other lines are dropped). */
  onError?: (message: string) => void;
  crontab?: string;
}): Promise<WorkerRunner> {
  let stopping = false;
  let current: Runner;
  /** Whether `current` has stopped by itself (stopping it again would throw). */
  let currentStopped = false;

  const concurrency = deps.concurrency ?? WORKER_CONCURRENCY;
  const failedFetchesBeforeRestart = FAILED_FETCH_ROUNDS_BEFORE_RESTART * concurrency;

  const start = async (): Promise<Runner> => {
    const events: WorkerEvents = new EventEmitter();
    const poolIds: string[] = [];
    events.on('pool:create', ({ workerPool }) => poolIds.push(workerPool.id));
    const shares = createEmployerShares(deps.jobsPerEmployer ?? concurrency);
    let failedFetches = 0;
    let runner: Runner | undefined;
    /** Why this runner was stopped here: its fetches kept failing. */
    let failing: string | null = null;
    const stoppedBy = (reason: unknown) => {
      if (runner === current) currentStopped = true;
      return replace(poolIds, failing ?? reason);
    };
    events.on('worker:getJob:empty', () => void (failedFetches = 0));
    events.on('job:start', () => void (failedFetches = 0));
    // graphile-worker logs a worker's failed fetch at debug level only: the event says it. The first
    // failure of a streak is reported, and the one that has the runner replaced.
    events.on('worker:getJob:error', ({ error }) => {
      const message = `${FETCH_FAILED}: ${error instanceof Error ? error.message : String(error)}`;
      failedFetches += 1;
      if (failedFetches === 1) deps.onError?.(message);
      if (failedFetches !== failedFetchesBeforeRestart) return;
      if (!runner || runner !== current || currentStopped || stopping) return;
      failing = `${FAILED_FETCH_ROUNDS_BEFORE_RESTART} rounds of job fetches failed in a row: ${message}`;
      void runner.stop().catch(() => {});
    });
    const logger = new WorkerLogger(() => (level, message) => {
      if (level === 'error') deps.onError?.(message);
    });
    runner = await run({
      // graphile-worker's scheduler: each slot is claimed once across worker processes (known_crontabs).
      ...(deps.crontab ? { crontab: deps.crontab } : {}),
      pgPool: deps.pgPool,
      taskList: shares.tasks(deps.tasks),
      concurrency,
      noHandleSignals: true,
      pollInterval: 2000,
      logger,
      events,
      forbiddenFlags: shares.forbiddenFlags,
      // Complete jobs in batches instead of one round trip each.
      preset: { worker: { completeJobBatchDelay: 0 } },
    });
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
      // A runner being replaced may be stopping already: then wait for it to end.
      if (!currentStopped) await current.stop().catch(() => current.promise.catch(() => {}));
    },
  };
}
