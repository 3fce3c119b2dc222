// Exports: the roster as JSON and CSV (and, with the FHIR capability, Bulk Data). Files live in
// Postgres and are deleted by an hourly job once expired.
import type { Capability } from '../capability.ts';
import { bulkDataRoutes } from './routes/bulk-data.ts';
import { csvExportRoutes } from './routes/csv-exports.ts';
import { rosterRoutes } from './routes/roster.ts';
import { exportEvents } from './events.ts';
import { DELETE_EXPIRED_TASK, exportTasks, RECOVER_EXPORTS_TASK } from './tasks.ts';

export const exportsCapability: Capability = {
  name: 'exports',
  events: exportEvents,
  routes: [rosterRoutes(), csvExportRoutes(), bulkDataRoutes()],
  tasks: exportTasks,
  crontab: [`0 * * * * ${DELETE_EXPIRED_TASK}`, `* * * * * ${RECOVER_EXPORTS_TASK}`],
};
