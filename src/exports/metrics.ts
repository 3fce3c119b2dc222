// Exports as Prometheus sees them: how long one took from kick-off to completion, and how large its
// files are, by kind (csv, fhir).
import type { Metrics } from '../metrics/registry.ts';
import type { ExportKind } from './store.ts';

export type ExportMetrics = { completed(kind: ExportKind, seconds: number, bytes: number): void };

export function exportMetrics(metrics: Metrics): ExportMetrics {
  const duration = metrics.histogram({
    name: 'export_duration_seconds',
    help: 'Time from an export\'s kick-off to its completion, by kind.',
    labelNames: ['kind'],
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
  });
  const size = metrics.histogram({
    name: 'export_size_bytes',
    help: 'Bytes of a completed export\'s files, by kind.',
    labelNames: ['kind'],
    buckets: [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9],
  });
  return {
    completed(kind, seconds, bytes) {
      duration.observe({ kind }, seconds);
      size.observe({ kind }, bytes);
    },
  };
}
