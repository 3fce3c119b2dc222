// The simulation aggregate (stream tenant-<employerId>.simulation-<id>) and its cost projection.
//
// The projection is deterministic and documented in the route's OpenAPI description: `members`
// active patients (of the employer, or of one cohort) are counted when the job runs; participants
// ramp up linearly to `adoptionRate` of members over the first min(6, months) months (month m has
// floor(members * adoptionRate * min(m, ramp) / ramp) participants); each month the baseline cost
// is members * baseline, the projected cost is (members - participants) * baseline + participants *
// tapered, all in minor units, integers throughout, so the same inputs always give the same figures.
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { SimulationEvent, SimulationInput } from './events.ts';

export type SimulationMonth = { month: number; participants: number; baselineCostMinor: number; projectedCostMinor: number; savingsMinor: number };
export type SimulationTotals = { members: number; baselineCostMinor: number; projectedCostMinor: number; savingsMinor: number };

export const RAMP_MONTHS = 6;

export function projectCosts(input: SimulationInput, members: number): { months: SimulationMonth[]; totals: SimulationTotals } {
  const ramp = Math.min(RAMP_MONTHS, input.months);
  const months: SimulationMonth[] = [];
  for (let month = 1; month <= input.months; month += 1) {
    const participants = Math.floor((members * input.adoptionRate * Math.min(month, ramp)) / ramp);
    const baselineCostMinor = members * input.baselineMonthlyCostMinor;
    const projectedCostMinor = (members - participants) * input.baselineMonthlyCostMinor + participants * input.taperedMonthlyCostMinor;
    months.push({ month, participants, baselineCostMinor, projectedCostMinor, savingsMinor: baselineCostMinor - projectedCostMinor });
  }
  const sum = (field: 'baselineCostMinor' | 'projectedCostMinor' | 'savingsMinor') => months.reduce((total, row) => total + row[field], 0);
  return { months, totals: { members, baselineCostMinor: sum('baselineCostMinor'), projectedCostMinor: sum('projectedCostMinor'), savingsMinor: sum('savingsMinor') } };
}

export type SimulationCommand =
  | ({ type: 'RequestSimulation'; simulationId: string } & SimulationInput)
  | { type: 'CompleteSimulation'; members: number };

export type SimulationState =
  | { status: 'absent' }
  | { status: 'running'; simulationId: string; input: SimulationInput }
  | { status: 'completed'; simulationId: string };

export const simulationDecider: Decider<SimulationCommand, SimulationEvent, SimulationState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'SimulationRequested': {
        const { simulationId, ...input } = event.data;
        return { status: 'running', simulationId, input };
      }
      case 'SimulationCompleted':
        return { status: 'completed', simulationId: event.data.simulationId };
    }
  },
  decide: (command, state) => {
    if (command.type === 'RequestSimulation') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'ALREADY_EXISTS', 'The simulation exists.');
      const { type: _, ...data } = command;
      return [{ type: 'SimulationRequested', data }];
    }
    // A re-run job (at-least-once) finds it completed and adds nothing.
    if (state.status !== 'running') return [];
    const { cohortId, currency } = state.input;
    return [{ type: 'SimulationCompleted', data: { simulationId: state.simulationId, cohortId, currency, ...projectCosts(state.input, command.members) } }];
  },
};
