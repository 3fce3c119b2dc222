// The monitoring files of docker-compose.yml, checked without Docker (which these machines lack): they
// parse, the compose services mount files that exist, Prometheus scrapes the port the processes serve
// their metrics on, and Grafana's data source is the one the dashboard names. That every metric the
// dashboard queries is exported is checked against a live scrape in metrics.test.ts.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dashboardExpressions, metricNamesOf, readDashboard } from '../support/dashboard.ts';

const root = join(import.meta.dirname, '../..');
// Compose's `<<: *anchor` merge keys are YAML 1.1's: asked for.
const yamlFile = (path: string) => parse(readFileSync(join(root, path), 'utf8'), { merge: true });

describe('monitoring files', () => {
  const compose = yamlFile('docker-compose.yml');

  it('compose runs Prometheus and Grafana with files that exist, and every process serves METRICS_PORT', () => {
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['prometheus', 'grafana', 'api', 'worker', 'projections']));
    for (const name of ['prometheus', 'grafana']) {
      for (const volume of compose.services[name].volumes as string[]) {
        const [source] = volume.split(':');
        if (source!.startsWith('./')) expect(existsSync(join(root, source!)), volume).toBe(true);
      }
    }
    for (const name of ['api', 'worker', 'projections']) expect(compose.services[name].environment.METRICS_PORT).toBe(9464);
  });

  it('Prometheus scrapes each role on that port', () => {
    const prometheus = yamlFile('ops/prometheus/prometheus.yml');
    const targets = (prometheus.scrape_configs as any[]).flatMap((job) => [
      ...(job.static_configs ?? []).flatMap((config: any) => config.targets as string[]),
      ...(job.dns_sd_configs ?? []).flatMap((config: any) => (config.names as string[]).map((name) => `${name}:${config.port}`)),
    ]);
    expect(targets.sort()).toEqual(['api:9464', 'projections:9464', 'worker:9464']);
  });

  it('Grafana provisions the Prometheus data source the dashboard queries, and the dashboard', () => {
    const datasources = yamlFile('ops/grafana/provisioning/datasources/prometheus.yml').datasources as any[];
    const dashboard = readDashboard();
    const uids = new Set(dashboard.panels.filter((panel) => panel.type !== 'row').map((panel) => panel.datasource?.uid));
    expect([...uids]).toEqual([datasources[0].uid]);
    expect(yamlFile('ops/grafana/provisioning/dashboards/employer-integrations.yml').providers[0].options.path).toBe('/var/lib/grafana/dashboards');
    expect(dashboardExpressions(dashboard).length).toBeGreaterThan(20);
  });

  it('reads metric names out of PromQL', () => {
    expect(metricNamesOf('histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{route!="unmatched"}[$__rate_interval])))')).toEqual(['http_request_duration_seconds']);
    expect(metricNamesOf('sum(rate(a_total[5m])) / sum(rate(b_total[5m])) or vector(0)')).toEqual(['a_total', 'b_total']);
  });
});
