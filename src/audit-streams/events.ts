// Events of the audit stream aggregate (./stream.ts), applied by projections/audit-streams/. A stream
// sends its employer's audit entries, in chain order, to one HTTPS destination in one of three
// request shapes (AUDIT_STREAM_PRESETS, ./presets.ts).
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

/** ndjson: generic signed NDJSON POST; splunk_hec: Splunk HTTP Event Collector; datadog: Datadog logs intake v2. */
export const AUDIT_STREAM_PRESETS = ['ndjson', 'splunk_hec', 'datadog'] as const;
export type AuditStreamPreset = (typeof AUDIT_STREAM_PRESETS)[number];
export const AUDIT_STREAM_STATUSES = ['active', 'paused'] as const;
export type AuditStreamStatus = (typeof AUDIT_STREAM_STATUSES)[number];

const auditStreamCreated = eventSchema('AuditStreamCreated', z.object({
  streamId: z.string(),
  name: z.string(),
  preset: z.enum(AUDIT_STREAM_PRESETS),
  url: z.string(),
  /** The signing secret (ndjson), HEC token (splunk_hec) or API key (datadog), sealed under ENCRYPTION_KEY with the stream id. */
  sealedSecret: z.string(),
  /** earliest: the whole audit log; latest: from this event's own entry on. */
  start: z.enum(['earliest', 'latest']),
  createdAt: z.string(),
}));
const auditStreamUpdated = eventSchema('AuditStreamUpdated', z.object({
  streamId: z.string(),
  changes: z.object({ name: z.string(), url: z.string() }).partial(),
}));
/** A new destination credential (splunk_hec, datadog): the next batch is sent with it. */
const auditStreamSecretReplaced = eventSchema('AuditStreamSecretReplaced', z.object({ streamId: z.string(), sealedSecret: z.string() }));
const auditStreamPaused = eventSchema('AuditStreamPaused', z.object({ streamId: z.string() }));
const auditStreamResumed = eventSchema('AuditStreamResumed', z.object({ streamId: z.string() }));
const auditStreamDeleted = eventSchema('AuditStreamDeleted', z.object({ streamId: z.string() }));

export const auditStreamEvents = [auditStreamCreated, auditStreamUpdated, auditStreamSecretReplaced, auditStreamPaused, auditStreamResumed, auditStreamDeleted] as const;
export type AuditStreamEvent = EventOf<(typeof auditStreamEvents)[number]>;
export const AUDIT_STREAM_EVENT_NAMES: readonly AuditStreamEvent['type'][] = auditStreamEvents.map((schema) => schema.type);
