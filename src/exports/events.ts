// Events of exports. The export's progress is operational state (table `exports`); the one domain
// event is its completion, which the webhooks capability turns into `export.ready`.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

/** An asynchronous export's files are ready; `downloadUrl` is absolute (PUBLIC_BASE_URL). */
const exportCompleted = eventSchema('ExportCompleted', z.object({
  exportId: z.string().max(64),
  kind: z.enum(['csv', 'fhir']),
  rowCount: z.number().int(),
  downloadUrl: z.string().max(2048),
}));

export const exportEvents = [exportCompleted] as const;

export type ExportCompleted = EventOf<typeof exportCompleted>;
