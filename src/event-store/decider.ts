// A capability's business rules as three pure functions (the Decider pattern, as in Emmett):
// initialState, evolve(state, event) -> state, decide(command, state) -> events (or a thrown
// DomainError). Nothing here touches I/O, so rules are tested with given/when/then and no database.

export type DomainEvent<Type extends string = string, Data extends Record<string, unknown> = Record<string, unknown>> = {
  type: Type;
  data: Data;
};

export type Decider<Command, Event extends DomainEvent, State> = {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Command, state: State) => Event[];
};

/**
 * A broken business rule. `status` is the HTTP status the API answers with, `code` the documented
 * error code; `details` are extra documented fields of the error body.
 */
export class DomainError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DomainError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export function fold<Event extends DomainEvent, State>(decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>, events: Event[]): State {
  return events.reduce(decider.evolve, decider.initialState());
}
