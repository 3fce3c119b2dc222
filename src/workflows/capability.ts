// Platform workflows: platform service tokens and the internal platform API, authorization requests,
// tapering proposals, invoices and simulations (their routes, read model, audit and worker job).
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { workflowsProjection } from '../../projections/workflows/projection.ts';
import { findPlatformToken } from '../../projections/workflows/queries.ts';
import type { Capability } from '../capability.ts';
import { workflowAuditMappers } from './audit.ts';
import { release } from '../worker/admission.ts';
import { completeSimulation, simulationAdmission } from './commands.ts';
import { workflowEvents } from './events.ts';
import { platformRoutes } from './platform-routes.ts';
import { workflowRoutes } from './routes.ts';

const SIMULATE_TASK = 'workflows-simulate';
/** The part of the dispatcher's EventJobPayload (src/worker/dispatcher.ts) the simulation job reads. */
const simulationJob = z.object({ eventId: z.string(), streamName: z.string(), tenantId: z.string() });

export const workflowsCapability: Capability = {
  name: 'workflows',
  events: workflowEvents,
  routes: [workflowRoutes(), platformRoutes()],
  projections: [workflowsProjection],
  auditMappers: workflowAuditMappers,
  consumers: [{ name: 'workflows-simulate', eventTypes: ['SimulationRequested'], task: SIMULATE_TASK }],
  tasks: (ctx) => {
    const simulate: Task = async (payload, helpers) => {
      const job = simulationJob.parse(payload);
      const event = (await ctx.eventStore.readStream(job.streamName)).find((candidate) => candidate.eventId === job.eventId);
      if (!event || event.type !== 'SimulationRequested') throw new Error(`event ${job.eventId} is not a SimulationRequested in ${job.streamName}`);
      const simulationId = String(event.data.simulationId);
      try {
        await completeSimulation(
          ctx,
          { tenantId: job.tenantId, actor: { type: 'system', id: 'simulation-worker' }, correlationId: event.metadata.correlationId, causationId: event.eventId },
          { simulationId, cohortId: (event.data.cohortId as string | null) ?? null },
        );
      } catch (error) {
        // Its last attempt ends the simulation's time in flight all the same.
        if (helpers.job.attempts >= helpers.job.max_attempts) await release(ctx.db.slonik, simulationAdmission(job.tenantId, simulationId));
        throw error;
      }
      await release(ctx.db.slonik, simulationAdmission(job.tenantId, simulationId));
    };
    return { [SIMULATE_TASK]: simulate };
  },
  // Platform tokens are this capability's; core's authentication asks it through its port.
  start: async (ctx) => ({ auth: { platformTokens: (tokenHash) => findPlatformToken(ctx.db.slonik, tokenHash) } }),
};
