// Exports: the roster as JSON and CSV (and, with the FHIR capability, Bulk Data). Files live in
// Postgres and are deleted by an hourly job once expired.
import type { Capability } from '../capability.ts';
import { exportRoutes } from './routes.ts';
import { DELETE_EXPIRED_TASK, exportTasks } from './tasks.ts';

export const exportsCapability: Capability = {
  name: 'exports',
  routes: [exportRoutes()],
  tasks: exportTasks,
  crontab: [`0 * * * * ${DELETE_EXPIRED_TASK}`],
};
