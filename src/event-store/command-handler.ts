// Runs one command against one stream: load, fold, decide, append with the loaded revision as the
// expected one, and on a concurrent writer's conflict start over (a few times). After a successful
// append it waits until the read models have caught up, so the caller's next query sees its write.
import { randomUUID } from 'node:crypto';
import { fold, type Decider, type DomainEvent } from './decider.ts';
import { WrongExpectedRevisionError, type Actor, type EventStore, type Position } from './port.ts';

export type CommandContext = {
  tenantId: string | null;
  actor: Actor;
  correlationId?: string;
  causationId?: string | null;
};

export type CommandDeps = {
  eventStore: EventStore;
  /** Resolves once the read models that handle `eventTypes` have applied events up to `position` (bounded wait). */
  waitForProjections: (position: Position, eventTypes: readonly string[]) => Promise<void>;
};

export type CommandResult<Event, State> = { newEvents: Event[]; state: State; position: Position | null };

const MAX_ATTEMPTS = 5;

export async function handleCommand<Command, Event extends DomainEvent, State>(
  deps: CommandDeps,
  request: {
    streamName: string;
    decider: Decider<Command, Event, State>;
    command: Command;
    context: CommandContext;
    /** The caller just minted the stream's id: skip reading it (an existing stream still fails the append). */
    newStream?: boolean;
  },
): Promise<CommandResult<Event, State>> {
  const { eventStore } = deps;
  const { streamName, decider, command, context } = request;
  for (let attempt = 1; ; attempt++) {
    const history = request.newStream && attempt === 1 ? [] : ((await eventStore.readStream(streamName)) as unknown as Event[]);
    const state = fold(decider, history);
    const newEvents = decider.decide(command, state);
    if (newEvents.length === 0) return { newEvents, state, position: null };
    try {
      const { position } = await eventStore.appendToStream(
        streamName,
        newEvents.map(({ type, data }) => ({ type, data })),
        {
          expectedRevision: history.length === 0 ? 'no_stream' : BigInt(history.length - 1),
          metadata: {
            tenantId: context.tenantId,
            actor: context.actor,
            correlationId: context.correlationId ?? randomUUID(),
            causationId: context.causationId ?? null,
            schemaVersion: 1,
            occurredAt: new Date().toISOString(),
          },
        },
      );
      await deps.waitForProjections(position, [...new Set(newEvents.map((event) => event.type))]);
      return { newEvents, state: newEvents.reduce(decider.evolve, state), position };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < MAX_ATTEMPTS) continue;
      throw error;
    }
  }
}
