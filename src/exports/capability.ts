// Exports: the roster as JSON and CSV (and, with the FHIR capability, Bulk Data). Files live in
// Postgres and are deleted by an hourly job once expired.
import type { Capability } from '../capability.ts';
import { bulkDataRoutes } from './bulk-routes.ts';
import { exportEvents } from './events.ts';
import { exportRoutes } from './routes.ts';
import { DELETE_EXPIRED_TASK, exportTasks, RECOVER_EXPORTS_TASK } from './tasks.ts';

export const exportsCapability: Capability = {
  name: 'exports',
  events: exportEvents,
  routes: [exportRoutes(), bulkDataRoutes()],
  tasks: exportTasks,
  crontab: [`0 * * * * ${DELETE_EXPIRED_TASK}`, `* * * * * ${RECOVER_EXPORTS_TASK}`],
};
