// The graphile-worker runners: capability tasks by name, in the service's own database.
//
// Two runners share the tasks (./fair-share.ts): the main one, WORKER_CONCURRENCY workers fed in
// batches by graphile-worker's local queue, takes jobs in priority order whoever they belong to; the
// reserve, WORKER_RESERVE_CONCURRENCY workers fetching one job at a time, takes only jobs of
// employers that run fewer than WORKER_JOBS_PER_EMPLOYER jobs in this process. So an employer whose
// jobs are slow (a receiver that takes its 10 s, a large export) may fill the main runner, yet the
// others' jobs still start at once. The local queue hands back jobs it could not give out within
// LOCAL_QUEUE_TTL_MS, so a job it fetched while every main worker was busy waits no longer than that
// before the reserve may take it.
//
// graphile-worker shuts its worker pool down for good when it cannot record a finished job (a
// database outage while a job completes: "Could not completeJobs; queue is in an inconsistent
// state"), so after an outage the process would run no job again. Each runner is therefore
// supervised: when it stops without being asked to, the jobs its pool had locked are unlocked
// (`force_unlock_workers`: that pool is gone, so they run again, as at-least-once allows) and a new
// runner starts, retried every second until the database answers.
//
// A runner can also stay up and never fetch a job again: graphile-worker (0.18) registers the task
// names once per runner and keeps that promise, so when the first registration fails (no connection
// within the pool's wait, at a busy start-up) every later fetch fails with the same cached error. A
// runner whose fetches keep failing is therefore replaced too.
import { EventEmitter } from 'node:events';
import { Logger as WorkerLogger, run, type RunnerOptions, type Runner, type Task, type TaskList, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import { createEmployerShares } from './fair-share.ts';
import { inSpan, SpanKind, traceContextOf, tracingEnabled } from '../tracing.ts';

export type WorkerRunner = { stop(): Promise<void> };

const RESTART_DELAY_MS = 1000;
/** Rounds of fetches (each worker fetching once a poll interval, 2 s) failing in a row before a runner is replaced. */
const FAILED_FETCH_ROUNDS_BEFORE_RESTART = 3;
const FETCH_FAILED = 'Error occurred fetching jobs';
const POLL_INTERVAL_MS = 2000;
/** How long the main runner's local queue keeps a fetched job no worker is free for. */
const LOCAL_QUEUE_TTL_MS = 1000;

/** Jobs the main runner of one worker process runs at a time. */
export const WORKER_CONCURRENCY = 16;

type SupervisionDeps = {
  pgPool: pg.Pool;
  /** Told when the runner stopped by itself, or could fetch no job, and is being replaced. */
  onRestart?: (reason: unknown) => void;
  /** Where graphile-worker's own errors go (its other lines are dropped). */
  onError?: (message: string) => void;
  /** Told of each runner's events emitter as it starts (job outcome metrics, ./metrics.ts). */
  observe?: (events: WorkerEvents) => void;
};

export async function startWorker(deps: SupervisionDeps & {
  tasks: TaskList;
  concurrency?: number;
  /** Workers beside the main ones for employers below their share (WORKER_RESERVE_CONCURRENCY); none by default. */
  reserveConcurrency?: number;
  /** An employer's share: with this many of its jobs running, the reserve leaves its jobs alone (WORKER_JOBS_PER_EMPLOYER). */
  jobsPerEmployer?: number;
  crontab?: string;
}): Promise<WorkerRunner> {
  const concurrency = deps.concurrency ?? WORKER_CONCURRENCY;
  const shares = createEmployerShares(deps.jobsPerEmployer ?? concurrency);
  const tasks = tracingEnabled() ? tracedTasks(deps.tasks) : deps.tasks;
  const main = await supervise(deps, (events) => ({
    // graphile-worker's scheduler: each slot is claimed once across worker processes (known_crontabs).
    ...(deps.crontab ? { crontab: deps.crontab } : {}),
    taskList: shares.counted(tasks),
    concurrency,
    events,
    // Fetch and lock jobs in batches, and complete them in batches, instead of one round trip each.
    preset: { worker: { localQueue: { size: 2 * concurrency, ttl: LOCAL_QUEUE_TTL_MS }, completeJobBatchDelay: 0 } },
  }), 1);
  if (!deps.reserveConcurrency) return main;
  const reserveConcurrency = deps.reserveConcurrency;
  const reserve = await supervise(deps, (events) => {
    events.on('job:start', shares.fetchedJob);
    return {
      taskList: shares.reserved(tasks),
      concurrency: reserveConcurrency,
      events,
      forbiddenFlags: shares.forbiddenFlags,
      preset: { worker: { completeJobBatchDelay: 0 } },
    };
  }, reserveConcurrency);
  return {
    async stop() {
      await Promise.all([main.stop(), reserve.stop()]);
    },
  };
}

/**
 * Each job in a span of its own, continuing the trace context its payload carries (an event's, from
 * the dispatcher; a request's or an earlier job's) or starting a trace.
 */
function tracedTasks(tasks: TaskList): TaskList {
  const traced = (name: string, task: Task): Task => (payload, helpers) =>
    inSpan(`job ${name}`, { kind: SpanKind.CONSUMER, parent: traceContextOf(payload) ?? null, attributes: { 'job.task': name, 'job.attempt': helpers.job.attempts } }, () =>
      Promise.resolve(task(payload, helpers)));
  return Object.fromEntries(Object.entries(tasks).map(([name, task]) => [name, traced(name, task!)]));
}

/**
 * Starts a runner with `options` (given its events emitter) and keeps one running until stopped.
 * `fetchers`: how many fetches one round makes (1 with a local queue, else one per worker).
 */
async function supervise(deps: SupervisionDeps, options: (events: WorkerEvents) => RunnerOptions, fetchers: number): Promise<WorkerRunner> {
  let stopping = false;
  let current: Runner;
  /** Whether `current` has stopped by itself (stopping it again would throw). */
  let currentStopped = false;

  const start = async (): Promise<Runner> => {
    const events: WorkerEvents = new EventEmitter();
    deps.observe?.(events);
    const poolIds: string[] = [];
    events.on('pool:create', ({ workerPool }) => poolIds.push(workerPool.id));
    let failedFetches = 0;
    let runner: Runner | undefined;
    /** Why this runner was stopped here: its fetches kept failing. */
    let failing: string | null = null;
    const stoppedBy = (reason: unknown) => {
      if (runner === current) currentStopped = true;
      return replace(poolIds, failing ?? reason);
    };
    const fetchFailed = (message: string) => {
      if (++failedFetches !== FAILED_FETCH_ROUNDS_BEFORE_RESTART * fetchers) return;
      if (!runner || runner !== current || currentStopped || stopping) return;
      failing = `${FAILED_FETCH_ROUNDS_BEFORE_RESTART} rounds of job fetches failed in a row: ${message}`;
      void runner.stop().catch(() => {});
    };
    const fetched = () => void (failedFetches = 0);
    events.on('localQueue:getJobs:complete', fetched);
    events.on('worker:getJob:empty', fetched);
    events.on('job:start', fetched);
    // A local queue's failed fetch is in graphile-worker's log only; a worker's own is an event
    // (logged at debug level): its first of a streak is reported.
    events.on('worker:getJob:error', ({ error }) => {
      const message = `${FETCH_FAILED}: ${error instanceof Error ? error.message : String(error)}`;
      if (failedFetches === 0) deps.onError?.(message);
      fetchFailed(message);
    });
    const logger = new WorkerLogger(() => (level, message) => {
      if (level !== 'error') return;
      deps.onError?.(message);
      if (message.startsWith(FETCH_FAILED)) fetchFailed(message);
    });
    runner = await run({ pgPool: deps.pgPool, noHandleSignals: true, pollInterval: POLL_INTERVAL_MS, logger, ...options(events) });
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
