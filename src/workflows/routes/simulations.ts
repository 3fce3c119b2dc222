// Cost projections of the tapering programme (simulate:run): requested here, computed by a worker job
// (../tasks.ts). Ids of another employer answer 404, like ids that do not exist.
import { z } from 'zod';
import { commandContextOf } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { getSimulation, simulationView } from '../../../projections/workflows/queries.ts';
import { requestSimulation } from '../commands.ts';
import { RAMP_MONTHS } from '../simulation.ts';
import { workflowId } from './common.ts';

const simulateAuth = { modes: ['apiKey', 'session'], scope: 'simulate:run' } as const;

const simulationBody = z.strictObject({
  cohortId: z.string().min(1).max(100).optional().meta({ description: 'Simulate one cohort of the employer; omitted: all of its active patients.' }),
  months: z.number().int().min(1).max(36).meta({ description: 'Months to project, 1 to 36.' }),
  adoptionRate: z.number().min(0).max(1).meta({ description: `Share of members on a tapering plan once adoption has ramped up (after ${RAMP_MONTHS} months), 0 to 1.` }),
  baselineMonthlyCostMinor: z.number().int().min(0).max(100_000_000).meta({ description: 'Monthly cost per member without tapering, in minor units.' }),
  taperedMonthlyCostMinor: z.number().int().min(0).max(100_000_000).meta({ description: 'Monthly cost per member on a tapering plan, in minor units (may exceed the baseline: savings are then negative).' }),
  currency: z.string().max(3).regex(/^[A-Z]{3}$/).meta({ description: 'ISO 4217 code, upper case; the figures are not converted.' }),
});

export function simulationRoutes(): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/simulations',
      summary: 'Run a cost projection of the tapering programme (asynchronous)',
      description:
        'Answers 202 at once; a worker job counts the members (the employer\'s active patients, or the cohort\'s) and computes the projection, then emits ' +
        '`simulation.completed`. Poll GET /api/employer/simulations/{id}. The projection is deterministic, integers in minor units: participants ramp ' +
        `linearly to adoptionRate of members over the first min(${RAMP_MONTHS}, months) months (month m: floor(members x adoptionRate x min(m, ramp) / ramp)); ` +
        'each month baselineCost = members x baselineMonthlyCostMinor, projectedCost = (members - participants) x baselineMonthlyCostMinor + participants x ' +
        'taperedMonthlyCostMinor, savings = baselineCost - projectedCost; totals sum the months. A cohort the employer does not have counts 0 members. ' +
        `An employer may have ${ctx.config.SIMULATION_MAX_IN_FLIGHT} simulations queued or running at once (SIMULATION_MAX_IN_FLIGHT); another is 429 ` +
        'TOO_MANY_SIMULATIONS_IN_FLIGHT with Retry-After, and changes nothing.',
      tags: ['Simulations'],
      auth: simulateAuth,
      body: simulationBody,
      idempotent: true,
      responses: { 202: { description: 'The simulation, running; Location names it', schema: simulationView }, 429: { description: 'TOO_MANY_SIMULATIONS_IN_FLIGHT' } },
      handler: async ({ body, principal, request, reply }) => {
        const { simulationId } = await requestSimulation(ctx, commandContextOf(principal, request.id), { ...body, cohortId: body.cohortId ?? null });
        reply.status(202).header('location', `/api/employer/simulations/${simulationId}`);
        return getSimulation(ctx.db.slonik, principal.employerId, simulationId);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/simulations/:simulationId',
      summary: 'A simulation: its status and, once completed, month-by-month results and totals',
      tags: ['Simulations'],
      auth: simulateAuth,
      params: z.object({ simulationId: workflowId }),
      responses: { 200: { description: 'The simulation', schema: simulationView }, 404: { description: 'No such simulation for this employer' } },
      handler: async ({ params, principal }) => getSimulation(ctx.db.slonik, principal.employerId, params.simulationId),
    });
  };
}
