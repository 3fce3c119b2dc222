// A decider for facts recorded at most once per stream: the first command records its event, every later
// one decides nothing. Streams named by employer and period (an hour, a month, a minute: src/operations,
// src/sso/saml-refusals.ts) record once per period; an export's stream records its completion once.
import type { Decider, DomainEvent } from './decider.ts';

export const recordOnceDecider: Decider<{ record: DomainEvent }, DomainEvent, { recorded: boolean }> = {
  initialState: () => ({ recorded: false }),
  evolve: () => ({ recorded: true }),
  decide: ({ record }, state) => (state.recorded ? [] : [record]),
};
