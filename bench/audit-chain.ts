// The audit-chain sealing figures of `npm run bench -- event-store` ((d)); `npm run bench -- audit-chain`
// runs them alone. In a database of their own:
// - Append throughput of single-event commands from 16 concurrent clients over 16 tenants, without
//   and with the audit-chain sealing projection running beside them in the same process, alternated
//   (off, on, off, on, off, on) so that a trend of the machine or the growing table hits both alike;
//   each pair's ratio with/without and their mean (goal >= 0.90). On a machine shared with other work
//   the throughput swings from run to run more than sealing moves it, so each run also measures the
//   CPU time (this process and its Postgres) per appended event, sealing included: what sealing costs.
//   Also how many sealing transactions the appends cost and how far sealing lags when appends stop.
// - Sealing throughput: events/s sealed (read, hashed, stored, checkpointed every 1,000 per employer)
//   from a backlog of 100,000 events over 100 employers.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { AUDIT_CHAIN_BATCH_WINDOW_MS, AUDIT_CHAIN_PROJECTION } from '../projections/audit-chain/projection.ts';
import { readCheckpoint, startProjectionRunner } from '../projections/runner.ts';
import { comparePositions } from '../src/event-store/port.ts';
import { runConcurrently, startBenchService, startCpuClock } from './support.ts';

const CONCURRENCY = 16;
const ROUNDS = Number(process.env.BENCH_SEAL_ROUNDS ?? 3);
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 6000);
const BACKLOG_EVENTS = Number(process.env.BENCH_SEAL_EVENTS ?? 100_000);
const BACKLOG_EMPLOYERS = 100;

export async function auditChainSealingBench(): Promise<void> {
  const service = await startBenchService({ roles: [] });
  const { eventStore, db, notifications } = service.ctx;
  const chain = service.projections.find((projection) => projection.name === AUDIT_CHAIN_PROJECTION)!;
  const startSealing = () =>
    startProjectionRunner({ pool: db.slonik, eventStore, notifications, projections: [chain], onError: (_, error) => console.error(error) });
  const sealedUpToHead = async () => comparePositions(await readCheckpoint(db.slonik, AUDIT_CHAIN_PROJECTION), await eventStore.headPosition()) >= 0;
  const waitUntilSealed = async () => {
    while (!(await sealedUpToHead())) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  // Each sealing transaction stamps its links with its own now(): distinct stamps count transactions.
  const sealingTransactionsSince = (since: Date) =>
    db.slonik.one(sql.type(z.object({ transactions: z.number(), links: z.number() }))`
      SELECT count(DISTINCT sealed_at)::int AS transactions, count(*)::int AS links FROM audit_chain WHERE sealed_at >= ${since.toISOString()}::timestamptz`);
  try {
    const append = async (worker: number, i: number) => {
      const tenantId = `bench${worker}`;
      await eventStore.appendToStream(
        `tenant-${tenantId}.employer-${randomUUID()}`,
        [{ type: 'EmployerCreated', data: { employerId: `${worker}-${i}`, name: 'Acme', createdAt: new Date().toISOString() } }],
        {
          expectedRevision: 'no_stream',
          metadata: { tenantId, actor: { type: 'system', id: 'bench' }, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
        },
      );
    };
    await runConcurrently(CONCURRENCY, 1000, append); // warm-up

    const cpuClock = await startCpuClock(db.pg);
    /** Runs the appends; `settle` (sealing the rest) counts in their CPU time. */
    const measure = async (settle: () => Promise<void>) => {
      const before = await cpuClock();
      const run = await runConcurrently(CONCURRENCY, DURATION_MS, append);
      const stoppedAt = performance.now();
      await settle();
      const settled = performance.now() - stoppedAt;
      const after = await cpuClock();
      const postgres = after.postgres === null || before.postgres === null ? null : after.postgres - before.postgres;
      const microsPerEvent = (seconds: number | null) => (seconds === null ? null : (seconds * 1e6) / run.count);
      return { perSecond: run.perSecond, settled, processMicros: microsPerEvent(after.process - before.process), postgresMicros: microsPerEvent(postgres) };
    };
    type Run = Awaited<ReturnType<typeof measure>>;
    const without: Run[] = [];
    const withSealing: Run[] = [];
    const sealing = { transactions: 0, links: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      without.push(await measure(async () => {}));
      const runner = await startSealing();
      await waitUntilSealed();
      const since = new Date();
      withSealing.push(await measure(waitUntilSealed));
      await runner.stop();
      const sealed = await sealingTransactionsSince(since);
      sealing.transactions += sealed.transactions;
      sealing.links += sealed.links;
    }
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    const figures = (values: number[], digits: number) => values.map((value) => value.toFixed(digits)).join(', ');
    const ratios = withSealing.map((run, round) => run.perSecond / without[round]!.perSecond);
    console.log(`    single-event appends, ${CONCURRENCY} clients over ${CONCURRENCY} tenants, ${DURATION_MS / 1000} s per run, ${ROUNDS} rounds of (without, with sealing)`);
    for (const [label, runs] of [['without sealing', without], ['with sealing   ', withSealing]] as const) {
      const perSecond = runs.map((run) => run.perSecond);
      const cpu = (pick: (run: Run) => number | null) => (runs.every((run) => pick(run) !== null) ? `${figures(runs.map((run) => pick(run)!), 0)} µs` : 'not measured (Postgres elsewhere)');
      console.log(`    ${label}: ${figures(perSecond, 0)} events/s (mean ${mean(perSecond).toFixed(0)}); CPU per event: this process ${cpu((run) => run.processMicros)}, Postgres ${cpu((run) => run.postgresMicros)}`);
    }
    console.log(`    ratio with/without per round: ${figures(ratios, 3)}; mean ${mean(ratios).toFixed(3)} (goal >= 0.90)`);
    const cpuPerEvent = (runs: Run[]) => mean(runs.map((run) => run.processMicros! + (run.postgresMicros ?? 0)));
    console.log(
      `    CPU per appended event, mean: without ${cpuPerEvent(without).toFixed(0)} µs, with ${cpuPerEvent(withSealing).toFixed(0)} µs; ` +
        `ratio without/with ${(cpuPerEvent(without) / cpuPerEvent(withSealing)).toFixed(3)} (the throughput ratio where CPU bounds the appends)`,
    );
    console.log(
      `    sealing beside them: ${sealing.transactions} transactions for ${sealing.links} events (${(sealing.links / Math.max(1, sealing.transactions)).toFixed(0)} per transaction, ` +
        `${AUDIT_CHAIN_BATCH_WINDOW_MS} ms batch window); caught up ${figures(withSealing.map((run) => run.settled), 0)} ms after appends stopped`,
    );

    await db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), 'tenant-seal' || (n % ${BACKLOG_EMPLOYERS}) || '.employer-' || n, 0, 'seal' || (n % ${BACKLOG_EMPLOYERS}), 'EmployerCreated',
        jsonb_build_object('employerId', 'seal' || n, 'name', 'Employer ' || (n % ${BACKLOG_EMPLOYERS}), 'createdAt', now()),
        jsonb_build_object('tenantId', 'seal' || (n % ${BACKLOG_EMPLOYERS}), 'actor', jsonb_build_object('type', 'system', 'id', 'bench'), 'correlationId', gen_random_uuid(),
          'causationId', null, 'schemaVersion', 1, 'occurredAt', now())
      FROM generate_series(1, ${BACKLOG_EVENTS}) AS n`);
    const started = performance.now();
    const runner = await startSealing();
    await waitUntilSealed();
    const seconds = (performance.now() - started) / 1000;
    await runner.stop();
    const checkpoints = await db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM audit_checkpoints WHERE employer_id LIKE 'seal%'`);
    console.log(
      `    sealing throughput, a backlog of ${BACKLOG_EVENTS} events over ${BACKLOG_EMPLOYERS} employers: ${seconds.toFixed(1)} s = ${(BACKLOG_EVENTS / seconds).toFixed(0)} events/s (${checkpoints} checkpoints signed)`,
    );
  } finally {
    await service.stopAll();
  }
}

export default auditChainSealingBench;
