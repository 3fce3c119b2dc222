// Fair shares of the worker between employers. Every job queued on an employer's behalf carries:
// - the flag `employer:<id>` (graphile-worker's job flags): a worker process leaves an employer's
//   jobs in the queue while it already runs WORKER_JOBS_PER_EMPLOYER of them (graphile-worker's
//   forbiddenFlags), so one employer's slow jobs (a receiver that takes its 10 s) never hold every slot;
// - the priority employer_job_priority gives it (migrations/0030_fair_shares.sql): how many jobs
//   the employer queued lately, so the jobs of an employer that queued few run before the backlog
//   of one that queued many. Jobs of no employer (the scheduled ones) have priority 0.
import type { Job, Task, TaskList } from 'graphile-worker';
import { sql, type ValueExpression } from 'slonik';

const FLAG_PREFIX = 'employer:';

/** graphile_worker.add_job's named arguments that make a job one of the employer's. */
export function employerJobArguments(employerId: ValueExpression) {
  return sql.fragment`priority => employer_job_priority((${employerId})::text), flags => ARRAY[${FLAG_PREFIX} || (${employerId})::text]`;
}

/** The same for a graphile_worker.job_spec: its priority and flags fields, NULL for a job of no employer. */
export function employerJobSpecFields(employerId: ValueExpression) {
  return sql.fragment`CASE WHEN (${employerId})::text IS NOT NULL THEN employer_job_priority((${employerId})::text) END,
    CASE WHEN (${employerId})::text IS NOT NULL THEN ARRAY[${FLAG_PREFIX} || (${employerId})::text] END`;
}

/**
 * Runs each employer's jobs within its share of this worker process: at most `perEmployer` at a time.
 * Workers skip the jobs of employers at their share (`forbiddenFlags`, asked before each fetch); a
 * job fetched past it all the same (workers fetching at the same moment) goes back to the queue
 * unrun, as a copy with its key, priority, flags and attempts left.
 */
export function createEmployerShares(perEmployer: number) {
  const running = new Map<string, number>();
  const employerFlagOf = (job: Job) => Object.keys(job.flags ?? {}).find((flag) => flag.startsWith(FLAG_PREFIX));
  const share = (task: Task): Task => async (payload, helpers) => {
    const flag = employerFlagOf(helpers.job);
    if (flag === undefined) return task(payload, helpers);
    const count = running.get(flag) ?? 0;
    if (count >= perEmployer) {
      const { job } = helpers;
      await helpers.addJob(job.task_identifier, job.payload, {
        ...(job.key ? { jobKey: job.key } : {}),
        priority: job.priority,
        flags: Object.keys(job.flags ?? {}),
        maxAttempts: job.max_attempts - job.attempts + 1,
      });
      return;
    }
    running.set(flag, count + 1);
    try {
      return await task(payload, helpers);
    } finally {
      const left = (running.get(flag) ?? 1) - 1;
      if (left > 0) running.set(flag, left);
      else running.delete(flag);
    }
  };
  return {
    tasks: (tasks: TaskList): TaskList => Object.fromEntries(Object.entries(tasks).map(([name, task]) => [name, share(task!)])),
    /** The flags of the employers whose share is taken (null: none). */
    forbiddenFlags: (): string[] | null => {
      const full = [...running].filter(([, count]) => count >= perEmployer).map(([flag]) => flag);
      return full.length > 0 ? full : null;
    },
  };
}
