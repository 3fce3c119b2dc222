// The workflows capability's graphile-worker task: runs a requested simulation (a job per
// SimulationRequested, enqueued by the job dispatcher) and ends its time in flight.
import type { Task, TaskList } from 'graphile-worker';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { eventOfJob } from '../worker/dispatcher.ts';
import { release } from '../worker/admission.ts';
import { completeSimulation, simulationAdmission } from './commands.ts';

export const SIMULATE_TASK = 'workflows-simulate';
/** The part of the dispatcher's EventJobPayload (src/worker/dispatcher.ts) the simulation job reads. */
const simulationJob = z.object({ eventId: z.string(), streamName: z.string(), tenantId: z.string() });

export function workflowTasks(ctx: AppContext): TaskList {
  const simulate: Task = async (payload, helpers) => {
    const job = simulationJob.parse(payload);
    const event = await eventOfJob(ctx.eventStore, job);
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
}
