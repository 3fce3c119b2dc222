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
 * The kinds of refusal, as Emmett and Medplum name them: the rule says what went wrong, the HTTP layer
 * which status that is (src/http/errors.ts).
 */
export type ErrorKind =
  | 'invalid' | 'unauthenticated' | 'forbidden' | 'not_found' | 'not_acceptable' | 'conflict' | 'gone' | 'precondition_failed'
  | 'too_large' | 'unprocessable' | 'too_many' | 'unavailable';

/**
 * A refused command or request: its kind, `code` the documented error code, `details` extra
 * documented fields of the error body.
 */
export class DomainError extends Error {
  readonly kind: ErrorKind;
  readonly code: string;
  readonly details: Record<string, unknown>;
  constructor(kind: ErrorKind, code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DomainError';
    this.kind = kind;
    this.code = code;
    this.details = details;
  }
}

export function fold<Event extends DomainEvent, State>(decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>, events: Event[]): State {
  return events.reduce(decider.evolve, decider.initialState());
}
