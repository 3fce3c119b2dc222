// Events of the scheduled operational jobs (spec 4.7): an integration alert and a monthly API key
// inventory review, each in a stream of its own per employer and period, so a second run of the same
// hour (month) finds it recorded and records nothing. The zod schemas are the events' shapes.
import { z } from 'zod';
import { eventSchema } from '../event-store/schemas.ts';

export const ipRejectionAlertData = z.object({
  /** UTC hour the alert belongs to, `2026-11-23T08`. */
  hour: z.string(),
  windowStart: z.string(),
  windowEnd: z.string(),
  threshold: z.number().int(),
  rejections: z.number().int(),
  /** Per key and client address, most rejections first. */
  sources: z.array(z.object({ keyId: z.string(), keyName: z.string().nullable(), ip: z.string(), rejections: z.number().int() })),
});
export type IpRejectionAlertData = z.infer<typeof ipRejectionAlertData>;

const flaggedKey = z.object({ keyId: z.string(), name: z.string(), lastUsedAt: z.string().nullable(), expiresAt: z.string().nullable() });
export const inventoryReviewData = z.object({
  /** UTC month reviewed, `2026-11`. */
  month: z.string(),
  activeKeys: z.number().int(),
  expectedMin: z.number().int(),
  expectedMax: z.number().int(),
  /** Whether the active key count lies outside [expectedMin, expectedMax]. */
  countOutOfBounds: z.enum(['below', 'above']).nullable(),
  staleDays: z.number().int(),
  expiringDays: z.number().int(),
  staleKeys: z.array(flaggedKey),
  expiringKeys: z.array(flaggedKey),
  /** Anything to act on: the admins are e-mailed. */
  flagged: z.boolean(),
});
export type InventoryReviewData = z.infer<typeof inventoryReviewData>;

/**
 * An operator removed a parked event from a projection's way (`cli projections skip`): the event is
 * left unapplied in that read model. In the stream of the skipped event's employer (system streams'
 * events: a system stream), one stream per skipped event, so it is recorded once.
 */
export const projectionEventSkippedData = z.object({
  projection: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  streamName: z.string(),
  position: z.string(),
  error: z.string(),
  /** The operator (`--by`, else the OS user running the CLI). */
  skippedBy: z.string(),
  reason: z.string(),
});

const integrationAlertRaised = eventSchema('IntegrationAlertRaised', ipRejectionAlertData);
const apiKeyInventoryReviewed = eventSchema('ApiKeyInventoryReviewed', inventoryReviewData);
const projectionEventSkipped = eventSchema('ProjectionEventSkipped', projectionEventSkippedData);
export const operationsEvents = [integrationAlertRaised, apiKeyInventoryReviewed, projectionEventSkipped] as const;
