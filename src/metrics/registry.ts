// The process's Prometheus metrics (prom-client), one registry per process (per started service: the
// tests run several in one process, so nothing here is global). Core code records through it; a
// capability adds its own series the same way, from its `start` or its tasks:
//
//   const pruned = ctx.metrics.counter({ name: 'retention_pruned_rows_total', help: '...', labelNames: ['table'] });
//   pruned.inc({ table: 'webhook_attempts' }, count);
//
// Names follow Prometheus's conventions: base units (`_seconds`, `_bytes`), `_total` for counters, and
// labels of bounded sets only (a route template, never a URL; an outcome, never an id).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration, type Metric } from 'prom-client';
import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';

/** A gauge-set read at scrape time may take this long; past it, its gauges are left empty for this scrape. */
export const COLLECT_TIMEOUT_MS = 2_000;

export type Metrics = {
  registry: Registry;
  /** The counter of this name, created on first use (a second call returns the first one's series). */
  counter<Label extends string = string>(config: CounterConfiguration<Label>): Counter<Label>;
  gauge<Label extends string = string>(config: GaugeConfiguration<Label>): Gauge<Label>;
  histogram<Label extends string = string>(config: HistogramConfiguration<Label>): Histogram<Label>;
  /**
   * Gauges whose values one read (a query, typically) sets when Prometheus scrapes: `read` runs once per
   * scrape for the whole set, within COLLECT_TIMEOUT_MS. A read that fails or runs late leaves the set
   * empty for that scrape and counts `metrics_collect_failures_total{collector}`; the scrape itself
   * never fails.
   */
  collectedGauges<Name extends string>(
    collector: string,
    gauges: Record<Name, Omit<GaugeConfiguration<string>, 'collect' | 'registers'>>,
    read: (gauges: Record<Name, Gauge>) => Promise<void>,
  ): Record<Name, Gauge>;
};

/** `defaults`: Node's process metrics too (CPU, memory, event-loop delay, GC), for a process that serves its metrics. */
export function createMetrics(options: { defaults: boolean }): Metrics {
  const registry = new Registry();
  if (options.defaults) collectDefaultMetrics({ register: registry });
  const existing = <Series extends Metric>(name: string) => registry.getSingleMetric(name) as Series | undefined;
  /** Each gauge set's read of the current scrape (shared by the set's gauges). */
  const scrapeReads: Array<() => Promise<void>> = [];
  const collectFailures = new Counter({
    name: 'metrics_collect_failures_total',
    help: 'Scrape-time reads (projection lag, queue depth, ...) that failed or ran past their time limit, by collector.',
    labelNames: ['collector'],
    registers: [registry],
    // Reported once this scrape's reads have ended, so it counts their failures.
    collect: async () => void (await Promise.all(scrapeReads.map((read) => read()))),
  });

  const metrics: Metrics = {
    registry,
    counter: (config) => existing(config.name) ?? new Counter({ ...config, registers: [registry] }),
    gauge: (config) => existing(config.name) ?? new Gauge({ ...config, registers: [registry] }),
    histogram: (config) => existing(config.name) ?? new Histogram({ ...config, registers: [registry] }),
    collectedGauges(collector, configs, read) {
      const names = Object.keys(configs) as Array<keyof typeof configs>;
      // Every gauge's collect() of one scrape starts in the same tick: they share one read.
      let reading: Promise<void> | null = null;
      const readOnce = () =>
        (reading ??= withTimeout(
          (async () => {
            for (const name of names) gauges[name].reset();
            await read(gauges);
          })(),
          COLLECT_TIMEOUT_MS,
        )
          .catch(() => {
            for (const name of names) gauges[name].reset();
            collectFailures.inc({ collector });
          })
          .finally(() => void (reading = null)));
      scrapeReads.push(readOnce);
      const gauges = Object.fromEntries(
        names.map((name) => [name, existing<Gauge>(configs[name].name) ?? new Gauge({ ...configs[name], registers: [registry], collect: readOnce })]),
      ) as Record<keyof typeof configs, Gauge>;
      return gauges;
    },
  };
  return metrics;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    promise.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

/** Buckets of latencies in seconds: 1 ms to 30 s. */
export const LATENCY_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A scrape-time read in one short transaction whose statements stop at COLLECT_TIMEOUT_MS (they never outlive the scrape). */
export function readWithinScrapeTime<T>(pool: DatabasePool, read: (tx: DatabaseTransactionConnection) => Promise<T>): Promise<T> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT set_config('statement_timeout', ${String(COLLECT_TIMEOUT_MS)}, true)`);
    return read(tx);
  });
}
