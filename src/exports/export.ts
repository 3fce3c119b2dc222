// An export's domain stream (`tenant-<employerId>.export-<exportId>`): its completion, recorded once
// (a retried job finds it there). Its progress is operational state, in the `exports` table (store.ts).
import type { Decider } from '../event-store/decider.ts';
import type { ExportCompleted } from './events.ts';

export type ExportState = { completed: boolean };
export type ExportCommand = { type: 'CompleteExport' } & ExportCompleted['data'];

export const exportDecider: Decider<ExportCommand, ExportCompleted, ExportState> = {
  initialState: () => ({ completed: false }),
  evolve: () => ({ completed: true }),
  decide(command, state) {
    if (state.completed) return [];
    const { type: _type, ...data } = command;
    return [{ type: 'ExportCompleted', data }];
  },
};
