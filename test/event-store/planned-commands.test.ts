// Multi-stream commands planned from a read model that lags (handlePlannedCommands): a stream no
// longer at the revision the plan read (readAs), or not in the state the plan assumed (asPlanned), has
// the plan made again on fresher reads; a plan that never holds fails as a conflict.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handlePlannedCommands, type CommandDeps, type CommandPlan, type StreamCommand } from '../../src/event-store/command-handler.ts';
import type { Decider, DomainEvent } from '../../src/event-store/decider.ts';
import { createPostgresEventStore } from '../../src/event-store/postgres.ts';
import { tenantStream, WrongExpectedRevisionError } from '../../src/event-store/port.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { storeTestEventRegistry } from '../support/event-registry.ts';

type Counted = DomainEvent<'Counted', { n: number }>;
const counter: Decider<{ n: number }, Counted, { count: number }> = {
  initialState: () => ({ count: 0 }),
  evolve: (state) => ({ count: state.count + 1 }),
  decide: ({ n }) => [{ type: 'Counted', data: { n } }],
};
const context = { tenantId: 't1', actor: { type: 'system', id: 'test' } } as const;
const count = (streamName: string, n: number, options: Partial<StreamCommand<{ n: number }, Counted, { count: number }>> = {}) =>
  ({ streamName, decider: counter, command: { n }, context, ...options }) as StreamCommand<any, any, any>;

describe('handlePlannedCommands', () => {
  let database: TestDatabase;
  let deps: CommandDeps;
  beforeAll(async () => {
    database = await createTestDatabase();
    deps = { eventStore: createPostgresEventStore(database.db.eventStore, database.notifications, storeTestEventRegistry), waitForProjections: async () => true };
  });
  afterAll(async () => database?.cleanup());

  const numbers = async (streamName: string) => (await deps.eventStore.readStream(streamName)).map((event) => event.data.n);

  it('plans again when a stream moved on from the revision the plan read (readAs), and writes on the fresh plan', async () => {
    const stream = tenantStream('t1', 'counter', randomUUID());
    await handlePlannedCommands(deps, async () => ({ commands: [count(stream, 1)], result: null }));
    // A lagging read model: the first plan still sees the stream empty.
    const seen = [-1n, 0n];
    let plans = 0;
    const { result } = await handlePlannedCommands(deps, async (): Promise<CommandPlan<number>> => {
      const revision = seen[Math.min(plans, 1)]!;
      plans += 1;
      return { commands: [count(stream, 2, { readAs: { revision, state: { count: Number(revision) + 1 } } })], result: plans };
    });
    expect(result).toBe(2);
    expect(await numbers(stream)).toEqual([1, 2]);
  });

  it('plans again, deciding nothing, when a stream is not in the state the plan assumed (asPlanned)', async () => {
    const claimed = tenantStream('t1', 'counter', randomUUID());
    const other = tenantStream('t1', 'counter', randomUUID());
    await handlePlannedCommands(deps, async () => ({ commands: [count(claimed, 1)], result: null }));
    let plans = 0;
    await handlePlannedCommands(deps, async () => {
      plans += 1;
      // The first plan assumes `claimed` empty; the next one knows better and leaves it out.
      const commands = plans === 1 ? [count(claimed, 2, { asPlanned: (state: { count: number }) => state.count === 0 }), count(other, 2)] : [count(other, 3)];
      return { commands, result: null };
    });
    expect(plans).toBe(2);
    expect(await numbers(claimed)).toEqual([1]);
    expect(await numbers(other)).toEqual([3]);
  });

  it('fails as a conflict when no plan holds', async () => {
    const stream = tenantStream('t1', 'counter', randomUUID());
    await handlePlannedCommands(deps, async () => ({ commands: [count(stream, 1)], result: null }));
    const stale = handlePlannedCommands(deps, async () => ({ commands: [count(stream, 2, { asPlanned: () => false })], result: null }));
    await expect(stale).rejects.toBeInstanceOf(WrongExpectedRevisionError);
    expect(await numbers(stream)).toEqual([1]);
  });
});
