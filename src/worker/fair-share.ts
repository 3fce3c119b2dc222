// Fair shares of the worker between employers. Every job queued on an employer's behalf carries:
// - a priority (lower runs first): how many jobs this process queued for the employer lately, a count
//   that halves every 30 seconds. So the jobs of an employer that queued few run before the backlog
//   of one that queued many, and each employer's own jobs keep their order. Jobs of no employer (the
//   scheduled ones) have priority 0. Counted in each process's memory: enqueueing costs no write, and
//   every process ranks a flooding employer behind the others alike;
// - the flag `employer:<id>` (graphile-worker's job flags), by which a worker process knows whose
//   jobs it runs and leaves alone those of employers that have their share (createEmployerShares).
import type { Job, Task, TaskList } from 'graphile-worker';
import { sql, type ValueExpression } from 'slonik';

const FLAG_PREFIX = 'employer:';
const HALF_LIFE_MS = 30_000;
/** graphile-worker's priority is a smallint. */
const PRIORITY_MAX = 32_767;
/** Employers whose count is remembered at most; past it, the one that queued least recently is forgotten. */
const REMEMBERED_EMPLOYERS = 10_000;

const recentJobs = new Map<string, { count: number; at: number }>();

/** Counts one job queued now for the employer (a statement's jobs together); answers its priority: the employer's jobs queued lately before it. */
export function employerJobPriority(employerId: string): number {
  const now = Date.now();
  const last = recentJobs.get(employerId);
  const before = last ? last.count * 0.5 ** ((now - last.at) / HALF_LIFE_MS) : 0;
  // Deleted and set again, so the map's order is the order of last use: its first key is the one to forget.
  recentJobs.delete(employerId);
  recentJobs.set(employerId, { count: before + 1, at: now });
  if (recentJobs.size > REMEMBERED_EMPLOYERS) recentJobs.delete(recentJobs.keys().next().value!);
  return Math.min(PRIORITY_MAX, Math.round(before));
}

export const employerFlag = (employerId: string) => `${FLAG_PREFIX}${employerId}`;

/** graphile_worker.add_job's named arguments that make a job (or the jobs of one statement) one of the employer's. */
export function employerJobArguments(employerId: string) {
  return sql.fragment`priority => ${employerJobPriority(employerId)}::smallint, flags => ARRAY[${employerFlag(employerId)}]`;
}

/** The flag alone, for a statement queuing jobs of several employers (a recovery: they keep priority 0). */
export function employerJobFlagArgument(employerId: ValueExpression) {
  return sql.fragment`flags => ARRAY[${FLAG_PREFIX} || (${employerId})::text]`;
}

/**
 * While employers are at their share, one reserve fetch at a time looks for others' jobs: the next
 * after this long, doubled after each that found nothing, up to PROBE_PAUSE_MAX_MS.
 */
const PROBE_PAUSE_MS = 250;
const PROBE_PAUSE_MAX_MS = 2000;

/**
 * The jobs each employer runs in this worker process (main and reserve runners), and the reserve's
 * rule: it leaves alone the jobs of employers running `share` or more (graphile-worker's
 * forbiddenFlags, asked before each of its fetches). A job the reserve fetched for an employer that
 * reached its share meanwhile (workers fetching at the same moment) goes back to the queue unrun, as
 * a copy with its key, priority, flags and attempts left. While some employers are at their share, a
 * reserve fetch scans the whole backlog it skips: so one reserve worker at a time fetches, less often
 * while they find nothing (PROBE_PAUSE_MS, doubling up to PROBE_PAUSE_MAX_MS), and the others wait for
 * what it found (a job: they fetch too) or for an employer to drop below its share.
 */
export function createEmployerShares(share: number) {
  const running = new Map<string, number>();
  /** Until when reserve fetches wait (a fetch is looking, or found nothing lately), and the next pause. */
  let quietUntil = 0;
  let pause = PROBE_PAUSE_MS;
  let wake = Promise.withResolvers<void>();
  const wakeAll = () => {
    quietUntil = 0;
    pause = PROBE_PAUSE_MS;
    wake.resolve();
    wake = Promise.withResolvers<void>();
  };
  const employerFlagOf = (job: Job) => Object.keys(job.flags ?? {}).find((flag) => flag.startsWith(FLAG_PREFIX));
  const atShare = () => [...running].filter(([, count]) => count >= share).map(([flag]) => flag);

  const counting = (task: Task, reserved: boolean): Task => async (payload, helpers) => {
    const flag = employerFlagOf(helpers.job);
    if (flag === undefined) return task(payload, helpers);
    const count = running.get(flag) ?? 0;
    if (reserved && count >= share) {
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
      if (left === share - 1) wakeAll();
    }
  };
  const wrapAll = (tasks: TaskList, reserved: boolean): TaskList =>
    Object.fromEntries(Object.entries(tasks).map(([name, task]) => [name, counting(task!, reserved)]));

  return {
    /** The main runner's tasks: counted, run whoever they belong to. */
    counted: (tasks: TaskList) => wrapAll(tasks, false),
    /** The reserve's tasks: counted, and a job of an employer at its share goes back unrun. */
    reserved: (tasks: TaskList) => wrapAll(tasks, true),
    /** The reserve's forbiddenFlags: the flags of the employers at their share (null: none). */
    async forbiddenFlags(): Promise<string[] | null> {
      while (atShare().length > 0 && Date.now() < quietUntil) {
        await Promise.race([wake.promise, new Promise((resolve) => setTimeout(resolve, quietUntil - Date.now()).unref())]);
      }
      const flags = atShare();
      if (flags.length === 0) return null;
      quietUntil = Date.now() + pause;
      pause = Math.min(2 * pause, PROBE_PAUSE_MAX_MS);
      return flags;
    },
    /** A reserve fetch found a job: there may be more, the waiting reserve workers fetch too. */
    fetchedJob: wakeAll,
  };
}
