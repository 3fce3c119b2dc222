// A decider for facts recorded at most once per stream: the stream is named by employer and period
// (hour, month), so the first run records the event and every later run of that period decides nothing.
import type { Decider } from '../event-store/decider.ts';
import type { OperationsEvent } from './events.ts';

export const recordOnceDecider: Decider<{ record: OperationsEvent }, OperationsEvent, { recorded: boolean }> = {
  initialState: () => ({ recorded: false }),
  evolve: () => ({ recorded: true }),
  decide: ({ record }, state) => (state.recorded ? [] : [record]),
};
