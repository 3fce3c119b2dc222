// A decider for facts recorded at most once per stream: the stream is named by employer and period
// (an hour, a month, a minute), so the first run records the event and every later run of that period decides nothing.
import type { Decider, DomainEvent } from '../event-store/decider.ts';

export const recordOnceDecider: Decider<{ record: DomainEvent }, DomainEvent, { recorded: boolean }> = {
  initialState: () => ({ recorded: false }),
  evolve: () => ({ recorded: true }),
  decide: ({ record }, state) => (state.recorded ? [] : [record]),
};
