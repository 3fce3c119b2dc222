// Runs a command against one stream: load, fold, decide, append with the loaded revision as the
// expected one, and on a concurrent writer's conflict start over (a few times). After a successful
// append it waits until the read models have caught up, so the caller's next query sees its write.
// `handleCommands` does the same for commands on several streams that must take effect together, and
// `handlePlannedCommands` for such commands planned from read models, planned again on a conflict.
// The events' metadata (actor, correlation, causation, time, the caller's address, trace context) is built here, and only here.
import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { currentTraceContext, inSpan } from '../tracing.ts';
import { DomainError, fold, type Decider, type DomainEvent } from './decider.ts';
import { currentClientOrigin } from '../http/client-origin.ts';
import { WrongExpectedRevisionError, type Actor, type AppendMetadata, type EventStore, type Position } from './port.ts';

export type CommandContext = {
  tenantId: string | null;
  actor: Actor;
  correlationId?: string;
  causationId?: string | null;
};

/**
 * The employer a command acts for: its context's tenant. Commands share the signature
 * `(ctx, context, input)`, and the employer comes from here, never from a separate argument.
 */
export function employerOf(context: CommandContext): string {
  if (context.tenantId === null) throw new Error('This command acts for an employer: its context needs a tenantId');
  return context.tenantId;
}

export type CommandDeps = {
  eventStore: EventStore;
  /**
   * Resolves once the read models that handle `eventTypes` have applied events up to `position`
   * (bounded wait): true when they did, false when the wait timed out (the write stands).
   */
  waitForProjections: (position: Position, eventTypes: readonly string[]) => Promise<boolean>;
};

/** One command on one stream. */
export type StreamCommand<Command, Event extends DomainEvent, State> = {
  streamName: string;
  decider: Decider<Command, Event, State>;
  command: Command;
  context: CommandContext;
  /** The caller just minted the stream's id: skip reading it (an existing stream still fails the append). */
  newStream?: boolean;
  /**
   * A condition on the stream's revision (-1 when it does not exist), such as an If-Match or "still
   * where the caller read it": when the stream does not satisfy it, now or after a concurrent append,
   * the command is refused with 412 PRECONDITION_FAILED instead of being decided again.
   */
  precondition?: (revision: bigint) => boolean;
  /**
   * For a command of a plan (handlePlannedCommands): the stream as the plan read it in a read model,
   * its revision and the state there. The stream is not read again; the append expects that revision,
   * so when the read model lagged it fails, and the plan is made again.
   */
  readAs?: { revision: bigint; state: State };
  /**
   * For a command of a plan: whether the stream's state is still what the plan assumed of it (an
   * e-mail nobody claims, say). When it is not, the read model the plan read lags: the plan is made
   * again, instead of the command being decided.
   */
  asPlanned?: (state: State) => boolean;
};

export type CommandResult<Event, State> = { newEvents: Event[]; state: State; position: Position | null };

// The commands of a batch each have their own command, event and state types: the batch is typed
// loosely, its results precisely.
type AnyStreamCommand = StreamCommand<any, any, any>;
type ResultsOf<Commands extends readonly AnyStreamCommand[]> = {
  [Index in keyof Commands]: Commands[Index] extends StreamCommand<any, infer Event, infer State> ? { newEvents: Event[]; state: State } : never;
};

// Writers that contend on one stream (keys created together by one user, say) each win a round in
// turn: enough rounds, spread by a jittered backoff, let a burst through instead of failing it.
const MAX_ATTEMPTS = 10;
const MAX_BACKOFF_MS = 50;

export async function handleCommand<Command, Event extends DomainEvent, State>(
  deps: CommandDeps,
  request: StreamCommand<Command, Event, State>,
): Promise<CommandResult<Event, State>> {
  const { results, position } = await handleCommands(deps, [request]);
  return { ...results[0], position };
}

/**
 * Each command is decided on its own stream's state; all their events are appended in one write
 * (`appendToStreams`), or none are. A domain error from any decider refuses them all. `occurredAt` is
 * the time in the events' metadata.
 */
export async function handleCommands<const Commands extends readonly AnyStreamCommand[]>(
  deps: CommandDeps,
  commands: Commands,
): Promise<{ results: ResultsOf<Commands>; position: Position | null; occurredAt: string }> {
  const { results, position, occurredAt } = await handlePlannedCommands(deps, async () => ({ commands, result: null }));
  return { results: results as ResultsOf<Commands>, position, occurredAt };
}

/** Commands on several streams, and what the caller answers once they are written. */
export type CommandPlan<Result> = { commands: readonly AnyStreamCommand[]; result: Result };

/**
 * A multi-stream command whose commands are planned from read models (which streams to write, at which
 * revisions): `plan` is made again before every attempt, so a concurrent writer's conflict, or a
 * stream no longer as the plan read it (`asPlanned`), is planned again on fresher reads. `readable`:
 * false when the read models did not catch up within the wait (the write stands; the caller may say so).
 */
export async function handlePlannedCommands<Result>(
  deps: CommandDeps,
  plan: () => Promise<CommandPlan<Result>>,
): Promise<{ result: Result; results: { newEvents: DomainEvent[]; state: unknown }[]; position: Position | null; occurredAt: string; readable: boolean }> {
  // Its events' metadata carries this span's context, so what they cause joins the command's trace.
  return inSpan('command', {}, async (span) => {
    const outcome = await decideAndAppend(deps, plan);
    span?.setAttribute('event.types', [...new Set(outcome.results.flatMap(({ newEvents }) => newEvents.map((event) => event.type)))]);
    return outcome;
  });
}

async function decideAndAppend<Result>(
  deps: CommandDeps,
  plan: () => Promise<CommandPlan<Result>>,
): Promise<{ result: Result; results: { newEvents: DomainEvent[]; state: unknown }[]; position: Position | null; occurredAt: string; readable: boolean }> {
  const { eventStore } = deps;
  // The correlation of commands whose context names none: one for every attempt.
  let fallbackCorrelationId: string | undefined;
  for (let attempt = 1; ; attempt++) {
    const { commands, result } = await plan();
    const correlationId = (fallbackCorrelationId ??= commands[0]?.context.correlationId ?? randomUUID());
    const occurredAt = new Date().toISOString();
    const decided = await Promise.all(
      commands.map(async ({ streamName, decider, command, newStream, precondition, readAs, asPlanned }) => {
        if (readAs) return { revision: readAs.revision, state: readAs.state, newEvents: decider.decide(command, readAs.state) as DomainEvent[] };
        const history: DomainEvent[] = newStream && attempt === 1 ? [] : await eventStore.readStream(streamName);
        const revision = BigInt(history.length - 1);
        if (precondition && !precondition(revision)) {
          throw new DomainError('precondition_failed', 'PRECONDITION_FAILED', 'The resource changed since the version the request is based on.');
        }
        const state = fold(decider, history);
        if (asPlanned && !asPlanned(state)) return null;
        return { revision, state, newEvents: decider.decide(command, state) as DomainEvent[] };
      }),
    );
    const stale = decided.findIndex((decision) => decision === null);
    if (stale < 0) {
      const decisions = decided as NonNullable<(typeof decided)[number]>[];
      const results = decisions.map(({ state, newEvents }, index) => ({ newEvents, state: newEvents.reduce(commands[index]!.decider.evolve, state) }));
      const appends = decisions.flatMap(({ revision, newEvents }, index) => {
        if (newEvents.length === 0) return [];
        const { streamName, context } = commands[index]!;
        return [
          {
            streamName,
            events: newEvents.map(({ type, data }) => ({ type, data })),
            expectedRevision: revision < 0n ? ('no_stream' as const) : revision,
            metadata: metadataOf(context, correlationId, occurredAt),
          },
        ];
      });
      if (appends.length === 0) return { result, results, position: null, occurredAt, readable: true };
      try {
        const { position } = await inSpan('event-store append', { attributes: { 'event_store.streams': appends.length } }, () => eventStore.appendToStreams(appends));
        const readable = await deps.waitForProjections(position, [...new Set(decisions.flatMap(({ newEvents }) => newEvents.map((event) => event.type)))]);
        return { result, results, position, occurredAt, readable };
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
      }
    } else if (attempt >= MAX_ATTEMPTS) {
      // A plan still stale after every attempt fails as a conflict would (409 CONCURRENT_MODIFICATION).
      throw new WrongExpectedRevisionError(commands[stale]!.streamName, 'any');
    }
    await setTimeout(Math.random() * Math.min(MAX_BACKOFF_MS, 2 ** attempt));
  }
}

function metadataOf(context: CommandContext, correlationId: string, occurredAt: string): AppendMetadata {
  return {
    tenantId: context.tenantId,
    actor: context.actor,
    correlationId: context.correlationId ?? correlationId,
    causationId: context.causationId ?? null,
    occurredAt,
    // A system actor's work is its own, whatever request happened to start it: it carries no caller's address.
    ...(context.actor.type === 'system' ? {} : currentClientOrigin()),
    ...currentTraceContext(),
  };
}
