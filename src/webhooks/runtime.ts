// What the webhooks capability holds per running service: the pooled, address-checking dispatcher
// (one per process, src/webhooks/safe-target.ts) and, in worker processes, the worker lease.
// Shutdown hooks run after the worker has finished its running jobs; stopping still waits for any
// attempt in flight (a direct test call), then closes the pool and gives up the lease. A job that
// arrives after that fails fast and runs again later (the delivery is claimed only after this check,
// so nothing is half-done).
import { sql } from 'slonik';
import type { Agent } from 'undici';
import type { AppContext } from '../app-context.ts';
import { createSafeDispatcher } from './safe-target.ts';
import { acquireWorkerLease, RECOVER_TASK, type WorkerLease } from './worker-lease.ts';

export type WebhookRuntime = {
  dispatcher: Agent;
  /** Worker processes only: resolves once the lease is held and recovery is scheduled. */
  workerLease(): Promise<WorkerLease>;
  /** Runs `work` unless the service is stopping; shutdown waits for it. */
  track<T>(work: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
};

/** This service's runtime (set by the capability's setup, before routes and tasks run). */
export function webhookRuntimeOf(ctx: AppContext): WebhookRuntime {
  if (!ctx.webhookRuntime) throw new Error('webhooks capability used before its setup');
  return ctx.webhookRuntime;
}

export function createWebhookRuntime(ctx: AppContext, options: { ca?: string | string[] }): WebhookRuntime {
  const dispatcher = createSafeDispatcher({
    allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS,
    logger: ctx.logger,
    ...(options.ca === undefined ? {} : { ca: options.ca }),
  });
  const inFlight = new Set<Promise<unknown>>();
  let lease: Promise<WorkerLease> | null = null;
  let stopping = false;

  return {
    dispatcher,
    workerLease() {
      lease ??= (async () => {
        const acquired = await acquireWorkerLease(ctx.db.connectionUri, ctx.logger);
        // Recover attempts of processes that died before this one started, then every minute.
        await ctx.db.slonik.query(sql.unsafe`SELECT graphile_worker.add_job(${RECOVER_TASK}, '{}'::json, job_key => ${RECOVER_TASK})`);
        return acquired;
      })();
      return lease;
    },
    async track(work) {
      if (stopping) throw new Error('webhook delivery is shutting down in this process; the job will run again');
      const running = work();
      inFlight.add(running);
      try {
        return await running;
      } finally {
        inFlight.delete(running);
      }
    },
    async stop() {
      stopping = true;
      await Promise.allSettled([...inFlight]);
      await dispatcher.close();
      await (await lease?.catch(() => null))?.release();
    },
  };
}
