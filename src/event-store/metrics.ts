// Appends as Prometheus sees them, on either adapter: the port wrapped, so every command's write is
// counted with its outcome and timed.
import { LATENCY_BUCKETS_SECONDS, type Metrics } from '../metrics/registry.ts';
import { WrongExpectedRevisionError, type EventStore } from './port.ts';

export function withAppendMetrics(store: EventStore, metrics: Metrics): EventStore {
  const appends = metrics.counter({
    name: 'event_store_appends_total',
    help: 'Appends (to one stream or several as one write), by outcome: ok, conflict (a stream was not at the expected revision), error.',
    labelNames: ['outcome'],
  });
  const appended = metrics.counter({ name: 'event_store_appended_events_total', help: 'Events written by successful appends.' });
  const duration = metrics.histogram({ name: 'event_store_append_duration_seconds', help: 'Time of an append, whatever its outcome.', buckets: LATENCY_BUCKETS_SECONDS });
  const [ok, conflict, error] = (['ok', 'conflict', 'error'] as const).map((outcome) => appends.labels({ outcome }));

  const measured = async <T>(eventCount: number, append: () => Promise<T>): Promise<T> => {
    const end = duration.startTimer();
    try {
      const result = await append();
      ok!.inc();
      appended.inc(eventCount);
      return result;
    } catch (failure) {
      (failure instanceof WrongExpectedRevisionError ? conflict : error)!.inc();
      throw failure;
    } finally {
      end();
    }
  };
  return Object.assign(Object.create(store) as EventStore, {
    appendToStream: (streamName, events, options) => measured(events.length, () => store.appendToStream(streamName, events, options)),
    appendToStreams: (streamAppends) => measured(streamAppends.reduce((sum, part) => sum + part.events.length, 0), () => store.appendToStreams(streamAppends)),
  } satisfies Pick<EventStore, 'appendToStream' | 'appendToStreams'>);
}
