// Fair shares of the worker between employers. Every job queued on an employer's behalf carries:
// - the flag `employer:<id>` (graphile-worker's job flags): a worker process leaves an employer's
//   jobs in the queue while it already runs WORKER_JOBS_PER_EMPLOYER of them (graphile-worker's
//   forbiddenFlags), so one employer's slow jobs (a receiver that takes its 10 s) never hold every slot;
// - the priority employer_job_priority gives it (migrations/0030_fair_shares.sql): how many jobs
//   the employer queued lately, so the jobs of an employer that queued few run before the backlog
//   of one that queued many. Jobs of no employer (the scheduled ones) have priority 0.
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

/** A job as graphile-worker reports it: its flags are an object of flag -> true. */
type FlaggedJob = { flags: Record<string, unknown> | null };

export type EmployerSlots = {
  started(job: FlaggedJob): void;
  finished(job: FlaggedJob): void;
  /** The flags of the employers whose limit of running jobs is reached (null: none). */
  forbiddenFlags(): string[] | null;
};

/** The jobs of each employer one worker process runs, at most `perEmployer` at a time. */
export function createEmployerSlots(perEmployer: number): EmployerSlots {
  const running = new Map<string, number>();
  const employerFlagOf = (job: FlaggedJob) => Object.keys(job.flags ?? {}).find((flag) => flag.startsWith(FLAG_PREFIX));
  return {
    started(job) {
      const flag = employerFlagOf(job);
      if (flag) running.set(flag, (running.get(flag) ?? 0) + 1);
    },
    finished(job) {
      const flag = employerFlagOf(job);
      if (!flag) return;
      const left = (running.get(flag) ?? 1) - 1;
      if (left > 0) running.set(flag, left);
      else running.delete(flag);
    },
    forbiddenFlags() {
      const full = [...running].filter(([, count]) => count >= perEmployer).map(([flag]) => flag);
      return full.length > 0 ? full : null;
    },
  };
}
