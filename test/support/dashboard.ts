// The Grafana dashboard of ops/grafana/dashboards, and the metric names its PromQL queries read.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DASHBOARD_PATH = join(import.meta.dirname, '../../ops/grafana/dashboards/employer-integrations.json');

type Panel = { type: string; title: string; datasource?: { uid: string }; targets?: Array<{ expr: string }>; panels?: Panel[] };
export type Dashboard = { uid: string; panels: Panel[] };

export const readDashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as Dashboard;

export const dashboardExpressions = (dashboard: Dashboard): string[] =>
  dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]).flatMap((panel) => (panel.targets ?? []).map((target) => target.expr));

/**
 * The metric names one expression reads: identifiers left once label matchers, ranges, grouping
 * clauses and numbers are taken out, and that are not functions (followed by `(`) or operators.
 * A histogram's `_bucket`, `_sum` and `_count` series name its family.
 */
export function metricNamesOf(expression: string): string[] {
  const bare = expression
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = [...bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()/g)].map((match) => match[1]!);
  const operators = new Set(['and', 'or', 'unless', 'bool', 'offset']);
  return [...new Set(names.filter((name) => !operators.has(name)).map((name) => name.replace(/_(bucket|sum|count)$/, '')))];
}
