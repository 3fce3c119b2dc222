// What the webhooks capability holds per process: the pooled, address-checking dispatcher (one per
// process, src/net/safe-target.ts) and the attempts in flight. Its start creates it and hands it to the
// routes (test sends) and the tasks. Stopping runs after the worker has finished its running jobs; it
// still waits for any attempt in flight (a direct test call), then closes the pool. A job that arrives
// after that fails fast and runs again later (the delivery is claimed only after this check, so nothing
// is half-done).
import type { Agent } from 'undici';
import type { StartContext } from '../app-context.ts';
import { createSafeDispatcher } from '../net/safe-target.ts';

export type WebhookRuntime = {
  dispatcher: Agent;
  /** Runs `work` unless the service is stopping; shutdown waits for it. */
  track<T>(work: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
};

export function createWebhookRuntime(ctx: StartContext, options: { ca?: string | string[] }): WebhookRuntime {
  const dispatcher = createSafeDispatcher({
    allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS,
    logger: ctx.logger,
    ...(options.ca === undefined ? {} : { ca: options.ca }),
  });
  const inFlight = new Set<Promise<unknown>>();
  let stopping = false;

  return {
    dispatcher,
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
    },
  };
}
