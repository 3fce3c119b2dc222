// Platform workflows: platform service tokens and the internal platform API, authorization requests,
// tapering proposals, invoices and simulations (their routes, read model, audit and worker job).
import { workflowsProjection } from '../../projections/workflows/projection.ts';
import { findPlatformToken } from '../../projections/workflows/queries.ts';
import type { Capability } from '../capability.ts';
import { workflowAuditMappers } from './audit.ts';
import { workflowEvents } from './events.ts';
import { authorizationRoutes } from './routes/authorizations.ts';
import { invoiceRoutes } from './routes/invoices.ts';
import { platformRoutes } from './routes/platform.ts';
import { simulationRoutes } from './routes/simulations.ts';
import { taperingProposalRoutes } from './routes/tapering-proposals.ts';
import { SIMULATE_TASK, workflowTasks } from './tasks.ts';

export const workflowsCapability: Capability = {
  name: 'workflows',
  events: workflowEvents,
  routes: [authorizationRoutes(), taperingProposalRoutes(), simulationRoutes(), invoiceRoutes(), platformRoutes()],
  projections: [workflowsProjection],
  auditMappers: workflowAuditMappers,
  consumers: [{ name: 'workflows-simulate', eventTypes: ['SimulationRequested'], task: SIMULATE_TASK }],
  tasks: workflowTasks,
  // Platform tokens are this capability's; core's authentication asks it through its port.
  start: async (ctx) => ({ auth: { platformTokens: (tokenHash) => findPlatformToken(ctx.db.slonik, tokenHash) } }),
};
