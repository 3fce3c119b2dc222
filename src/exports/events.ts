// Events of exports. The export's progress is operational state (table `exports`); the one domain
// event is its completion, which the webhooks capability turns into `export.ready`.
import { z } from 'zod';
import type { DomainEvent } from '../event-store/decider.ts';
import { eventSchema } from '../event-store/schemas.ts';

export const exportEventSchemas = {
  /** An asynchronous export's files are ready; `downloadUrl` is absolute (PUBLIC_BASE_URL). */
  ExportCompleted: z.object({ exportId: z.string().max(64), kind: z.enum(['csv', 'fhir']), rowCount: z.number().int(), downloadUrl: z.string().max(2048) }),
} as const;

export type ExportCompleted = DomainEvent<'ExportCompleted', z.infer<typeof exportEventSchemas.ExportCompleted>>;

export const exportEvents = [eventSchema('ExportCompleted', exportEventSchemas.ExportCompleted)];
