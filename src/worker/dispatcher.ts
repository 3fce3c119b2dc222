// Turns committed events into graphile-worker jobs, exactly once per (event, consumer): the dispatcher
// is a projection, so the jobs are added in the same transaction that moves its checkpoint; the job key
// `<consumer>:<eventId>` guards again should anything replay it. The job of a tenant's event is one
// of that employer's, served by its fair share of the workers (./fair-share.ts).
import { sql } from 'slonik';
import type { Projection } from '../event-store/projection.ts';
import type { EventStore, RecordedEvent } from '../event-store/port.ts';
import { traceContextOf, type TraceContext } from '../tracing.ts';
import { employerFlag, employerJobPriority } from './fair-share.ts';

export type EventConsumer = {
  /** Unique name; part of each job key. */
  name: string;
  eventTypes: readonly string[];
  /** The graphile-worker task that handles one event. */
  task: string;
};

/**
 * What a consumer's task receives: enough to load the event, never the event's secrets; and the
 * event's trace context, which the job's span continues (./runner.ts).
 */
export type EventJobPayload = { consumer: string; eventId: string; type: string; streamName: string; tenantId: string | null; position: string } & TraceContext;

/** The event a consumer's job was queued for, read back from its stream (undefined if the stream lacks it). */
export async function eventOfJob(eventStore: EventStore, job: Pick<EventJobPayload, 'streamName' | 'eventId'>): Promise<RecordedEvent | undefined> {
  return (await eventStore.readStream(job.streamName)).find((event) => event.eventId === job.eventId);
}

export function jobDispatcherProjection(consumers: EventConsumer[], name = 'job-dispatcher'): Projection {
  return {
    name,
    tables: [],
    eventTypes: [...new Set(consumers.flatMap((consumer) => consumer.eventTypes))],
    rebuildable: false,
    awaitedByCommands: false,
    async apply(tx, events) {
      const jobs = events.flatMap((event) =>
        consumers.filter((consumer) => consumer.eventTypes.includes(event.type)).map((consumer) => toJob(consumer, event)),
      );
      if (jobs.length === 0) return;
      await tx.query(sql.unsafe`
        SELECT count(*) FROM graphile_worker.add_jobs(
          (SELECT array_agg(ROW(j.task, j.payload, NULL, NULL, NULL, j.job_key, j.priority, j.flags)::graphile_worker.job_spec)
           FROM jsonb_to_recordset(${sql.jsonb(jobs)}) AS j(task text, payload json, job_key text, priority smallint, flags text[])),
          job_key_preserve_run_at => true)`);
    },
  };
}

function toJob(consumer: EventConsumer, event: RecordedEvent) {
  const payload: EventJobPayload = {
    consumer: consumer.name,
    eventId: event.eventId,
    type: event.type,
    streamName: event.streamName,
    tenantId: event.metadata.tenantId,
    position: `${event.position.commit}/${event.position.prepare}`,
    ...traceContextOf(event.metadata),
  };
  const tenantId = event.metadata.tenantId;
  const share = tenantId === null ? { priority: null, flags: null } : { priority: employerJobPriority(tenantId), flags: [employerFlag(tenantId)] };
  return { task: consumer.task, payload, job_key: `${consumer.name}:${event.eventId}`, ...share };
}
