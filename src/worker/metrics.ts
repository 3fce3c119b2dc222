// graphile-worker as Prometheus sees it: each job's outcome per task (from the runners' events), and the
// queue per task and state, read from graphile_worker.jobs at each scrape.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { WorkerEvents } from 'graphile-worker';
import { readWithinScrapeTime, type Metrics } from '../metrics/registry.ts';

/** Counts the outcomes of the jobs a runner (one events emitter) runs. */
export function jobOutcomes(metrics: Metrics): (events: WorkerEvents) => void {
  const jobs = metrics.counter({
    name: 'graphile_worker_jobs_total',
    help: 'Job attempts finished by this process, by task and outcome: success, retried (failed, another attempt follows), failed (its last attempt failed).',
    labelNames: ['task', 'outcome'],
  });
  return (events) => {
    events.on('job:success', ({ job }) => jobs.inc({ task: job.task_identifier, outcome: 'success' }));
    events.on('job:error', ({ job }) => jobs.inc({ task: job.task_identifier, outcome: job.attempts >= job.max_attempts ? 'failed' : 'retried' }));
  };
}

const queueRow = z.object({ task: z.string(), state: z.enum(['ready', 'scheduled', 'running', 'failed']), jobs: z.number() });

/** The queue's depth per task and state (database-wide: every process reports the same queue). */
export function reportQueueDepth(metrics: Metrics, pool: DatabasePool) {
  metrics.collectedGauges(
    'graphile_worker_queue',
    {
      jobs: {
        name: 'graphile_worker_queue_jobs',
        help: 'Jobs in the queue by task and state: ready (due, unlocked), scheduled (due later), running (locked), failed (no attempts left).',
        labelNames: ['task', 'state'],
      },
    },
    async ({ jobs }) => {
      const rows = await readWithinScrapeTime(pool, (tx) =>
        tx.any(sql.type(queueRow)`
          SELECT task_identifier AS task,
                 CASE WHEN attempts >= max_attempts THEN 'failed' WHEN locked_at IS NOT NULL THEN 'running'
                      WHEN run_at > now() THEN 'scheduled' ELSE 'ready' END AS state,
                 count(*)::int AS jobs
          FROM graphile_worker.jobs GROUP BY 1, 2`),
      );
      for (const row of rows) jobs.set({ task: row.task, state: row.state }, row.jobs);
    },
  );
}
