// Platform workflows: platform service tokens and the internal platform API, authorization requests,
// tapering proposals, invoices and simulations (their routes, read model, audit and worker job).
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { workflowsProjection } from '../../projections/workflows/projection.ts';
import { findPlatformToken } from '../../projections/workflows/queries.ts';
import type { AppContext } from '../app-context.ts';
import type { Capability } from '../capability.ts';
import { workflowAuditMappers } from './audit.ts';
import { completeSimulation } from './commands.ts';
import { workflowEvents } from './events.ts';
import { temporaryPatientDirectory, type PatientDirectory } from './patient-directory.ts';
import { platformRoutes } from './platform-routes.ts';
import { workflowRoutes } from './routes.ts';

const SIMULATE_TASK = 'workflows-simulate';
/** The part of the dispatcher's EventJobPayload (src/worker/dispatcher.ts) the simulation job reads. */
const simulationJob = z.object({ eventId: z.string(), streamName: z.string(), tenantId: z.string() });

export type WorkflowsCapabilityOptions = {
  /** Where patients are checked and counted; the temporary table-backed directory by default (see patient-directory.ts). */
  patientDirectory?: (ctx: AppContext) => PatientDirectory;
};

export function createWorkflowsCapability(options: WorkflowsCapabilityOptions = {}): Capability {
  return {
    name: 'workflows',
    events: workflowEvents,
    routes: [workflowRoutes(), platformRoutes()],
    projections: [workflowsProjection],
    auditMappers: workflowAuditMappers,
    consumers: [{ name: 'workflows-simulate', eventTypes: ['SimulationRequested'], task: SIMULATE_TASK }],
    tasks: (ctx) => {
      const simulate: Task = async (payload) => {
        const job = simulationJob.parse(payload);
        const event = (await ctx.eventStore.readStream(job.streamName)).find((candidate) => candidate.eventId === job.eventId);
        if (!event || event.type !== 'SimulationRequested') throw new Error(`event ${job.eventId} is not a SimulationRequested in ${job.streamName}`);
        await completeSimulation(
          ctx,
          { tenantId: job.tenantId, actor: { type: 'system', id: 'simulation-worker' }, correlationId: event.metadata.correlationId, causationId: event.eventId },
          { simulationId: String(event.data.simulationId), cohortId: (event.data.cohortId as string | null) ?? null },
        );
      };
      return { [SIMULATE_TASK]: simulate };
    },
    setup: async (ctx) => {
      ctx.platformTokenLookup = (tokenHash) => findPlatformToken(ctx.db.slonik, tokenHash);
      ctx.patientDirectory = options.patientDirectory?.(ctx) ?? temporaryPatientDirectory(ctx.db.slonik);
    },
  };
}

export const workflowsCapability = createWorkflowsCapability();
