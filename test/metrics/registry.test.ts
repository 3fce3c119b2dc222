// The registry's own rules, without a service: a scrape-time read that fails empties its gauges and is
// counted, and the scrape still answers; the bearer check; the settings.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createMetrics } from '../../src/metrics/registry.ts';
import { metricsServed, scrapeAuthorized } from '../../src/metrics/scrape.ts';
import { parseScrape } from '../support/prometheus.ts';

describe('metrics registry', () => {
  it('answers a scrape whose scrape-time read fails: its gauges empty, the failure counted, the rest intact', async () => {
    const metrics = createMetrics({ defaults: false });
    let fail = false;
    metrics.collectedGauges('probe', { depth: { name: 'probe_depth', help: 'a probe', labelNames: ['queue'] } }, async ({ depth }) => {
      if (fail) throw new Error('database unavailable');
      depth.set({ queue: 'a' }, 3);
    });
    metrics.counter({ name: 'probe_events_total', help: 'a counter' }).inc(2);

    const first = parseScrape(await metrics.registry.metrics());
    expect(first.value('probe_depth', { queue: 'a' })).toBe(3);
    fail = true;
    const second = parseScrape(await metrics.registry.metrics());
    expect(second.labelSets('probe_depth')).toEqual([]);
    expect(second.value('metrics_collect_failures_total', { collector: 'probe' })).toBe(1);
    expect(second.value('probe_events_total')).toBe(2);
  });

  it('reads once per scrape for every gauge of a set', async () => {
    const metrics = createMetrics({ defaults: false });
    let reads = 0;
    metrics.collectedGauges('pair', { a: { name: 'pair_a', help: 'a' }, b: { name: 'pair_b', help: 'b' } }, async ({ a, b }) => {
      reads += 1;
      a.set(1);
      b.set(2);
    });
    const scraped = parseScrape(await metrics.registry.metrics());
    expect([scraped.value('pair_a'), scraped.value('pair_b'), reads]).toEqual([1, 2, 1]);
  });

  it('returns the series first registered under a name, so a capability may ask twice', () => {
    const metrics = createMetrics({ defaults: false });
    const config = { name: 'retention_pruned_rows_total', help: 'rows pruned', labelNames: ['table'] };
    expect(metrics.counter(config)).toBe(metrics.counter(config));
  });

  it('takes a scrape only with the exact bearer when a secret is set', () => {
    const secret = 'a-metrics-secret-of-some-length';
    expect(scrapeAuthorized(secret, `Bearer ${secret}`)).toBe(true);
    expect(scrapeAuthorized(secret, `bearer ${secret}`)).toBe(true);
    expect(scrapeAuthorized(secret, `Bearer ${secret}x`)).toBe(false);
    expect(scrapeAuthorized(secret, secret)).toBe(false);
    expect(scrapeAuthorized(secret, undefined)).toBe(false);
    expect(scrapeAuthorized(undefined, undefined)).toBe(true);
  });

  it('serves metrics only when METRICS_SECRET or METRICS_PORT is set, a port apart from the API\'s', () => {
    expect(metricsServed(loadConfig({}))).toBe(false);
    expect(metricsServed(loadConfig({ METRICS_PORT: '9464' }))).toBe(true);
    expect(metricsServed(loadConfig({ METRICS_SECRET: 'x'.repeat(16) }))).toBe(true);
    expect(() => loadConfig({ METRICS_SECRET: 'short' })).toThrow(/METRICS_SECRET/);
    expect(() => loadConfig({ PORT: '4000', METRICS_PORT: '4000' })).toThrow(/METRICS_PORT: must differ from PORT/);
  });
});
