// Given / when / then for deciders, with no database:
//   const given = deciderSpec(apiKeyDecider);
//   given([created]).when({ type: 'RevokeApiKey', ... }).then([{ type: 'ApiKeyRevoked', ... }]);
//   given([]).when(command).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
import { expect } from 'vitest';
import { DomainError, fold, type Decider, type DomainEvent } from '../../src/event-store/decider.ts';

export function deciderSpec<Command, Event extends DomainEvent, State>(decider: Decider<Command, Event, State>) {
  return (history: Event[]) => ({
    when: (command: Command) => {
      const run = () => decider.decide(command, fold(decider, history));
      return {
        /** The command produces exactly these events ([] for "nothing happens"). */
        then: (expected: Event[]) => expect(run()).toEqual(expected),
        /** The command is refused with a DomainError carrying these fields. */
        thenThrows: (expected: Partial<Pick<DomainError, 'kind' | 'code' | 'message'>>) => {
          let thrown: unknown;
          try {
            run();
          } catch (error) {
            thrown = error;
          }
          expect(thrown).toBeInstanceOf(DomainError);
          expect(thrown).toMatchObject(expected);
        },
      };
    },
  });
}
