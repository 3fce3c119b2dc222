// Webhook deliveries as Prometheus sees them: each attempt's outcome, and for delivered ones the time
// from the event to the receiver's acknowledgement (end to end: dispatcher, fan-out, queue, attempts).
import { LATENCY_BUCKETS_SECONDS, type Metrics } from '../metrics/registry.ts';

/** delivered: 2xx; retrying: failed, another attempt is scheduled; exhausted: failed, no attempt left; gone: 410, the subscription is disabled. */
export type AttemptOutcome = 'delivered' | 'retrying' | 'exhausted' | 'gone';

export type DeliveryMetrics = { attempted(outcome: AttemptOutcome, eventTimestamp: string): void };

export function deliveryMetrics(metrics: Metrics): DeliveryMetrics {
  const attempts = metrics.counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, retrying, exhausted (no attempt left), gone (410: subscription disabled).',
    labelNames: ['outcome'],
  });
  const latency = metrics.histogram({
    name: 'webhook_delivery_latency_seconds',
    help: 'Time from the event to its delivery\'s acknowledgement by the receiver (every attempt and retry included).',
    buckets: [...LATENCY_BUCKETS_SECONDS, 60, 300, 1800, 3600, 21600, 86400],
  });
  return {
    attempted(outcome, eventTimestamp) {
      attempts.inc({ outcome });
      if (outcome === 'delivered') latency.observe(Math.max(0, (Date.now() - Date.parse(eventTimestamp)) / 1000));
    },
  };
}
