// The audit-chain sealing figures of `npm run bench -- event-store` ((d)); `npm run bench -- audit-chain`
// runs them alone. In a database of their own:
// - Append throughput of single-event commands from 16 concurrent clients over 16 tenants, without
//   and with the audit-chain sealing projection running beside them in the same process, alternated
//   (off, on, off, on, off, on) so that a trend of the machine or the growing table hits both alike;
//   each pair's ratio with/without and their mean (goal >= 0.90); the CPU time (this process and its
//   Postgres) per appended event; how many sealing transactions the appends cost and how far sealing
//   lags when appends stop.
// - Sealing throughput: events/s sealed (read, hashed, stored, checkpointed every 1,000 per employer)
//   from a backlog of 100,000 events over 100 employers, and the CPU time per sealed event.
// On a machine shared with other work the throughput swings from run to run more than sealing moves
// it. The steadier figure is sealing's CPU per event over an append's: where CPU bounds the appends,
// the ratio with/without is about 1 / (1 + that fraction).
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
    startProjectionRunner({ pool: db.slonik, eventStore, notifications, projections: [chain], maxConcurrentBatches: 1, onError: (_, error) => console.error(error) });
  const sealedUpToHead = async () => comparePositions(await readCheckpoint(db.slonik, AUDIT_CHAIN_PROJECTION), await eventStore.headPosition()) >= 0;
  const waitUntilSealed = async (pollMs = 5) => {
    while (!(await sealedUpToHead())) await new Promise((resolve) => setTimeout(resolve, pollMs));
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
    /** µs of CPU per event since `before` (Postgres's 0 when it is not measured). */
    const cpuPerEvent = async (before: Awaited<ReturnType<typeof cpuClock>>, events: number) => {
      const after = await cpuClock();
      const micros = (seconds: number) => (seconds * 1e6) / events;
      const process = micros(after.process - before.process);
      const postgres = after.postgres === null || before.postgres === null ? 0 : micros(after.postgres - before.postgres);
      return { process, postgres, total: process + postgres };
    };
    /** Runs the appends; `settle` (sealing the rest) counts in their CPU time. */
    const measure = async (settle: () => Promise<void>) => {
      const before = await cpuClock();
      const run = await runConcurrently(CONCURRENCY, DURATION_MS, append);
      const stoppedAt = performance.now();
      await settle();
      const settled = performance.now() - stoppedAt;
      return { perSecond: run.perSecond, settled, cpu: await cpuPerEvent(before, run.count) };
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
      withSealing.push(await measure(() => waitUntilSealed()));
      await runner.stop();
      const sealed = await sealingTransactionsSince(since);
      sealing.transactions += sealed.transactions;
      sealing.links += sealed.links;
    }
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    const figures = (values: number[], digits: number) => values.map((value) => value.toFixed(digits)).join(', ');
    const ratios = withSealing.map((run, round) => run.perSecond / without[round]!.perSecond);
    console.log(`    single-event appends, ${CONCURRENCY} clients over ${CONCURRENCY} tenants, ${DURATION_MS / 1000} s per run, ${ROUNDS} rounds of (without, with sealing)`);
    const cpuLabel = (await cpuClock()).postgres === null ? 'this process; Postgres elsewhere, not measured' : 'this process + Postgres';
    for (const [label, runs] of [['without sealing', without], ['with sealing   ', withSealing]] as const) {
      const perSecond = runs.map((run) => run.perSecond);
      console.log(`    ${label}: ${figures(perSecond, 0)} events/s (mean ${mean(perSecond).toFixed(0)}); CPU per event (${cpuLabel}): ${figures(runs.map((run) => run.cpu.total), 0)} µs`);
    }
    console.log(`    ratio with/without per round: ${figures(ratios, 3)}; mean ${mean(ratios).toFixed(3)} (goal >= 0.90)`);
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
    const before = await cpuClock();
    const started = performance.now();
    const runner = await startSealing();
    await waitUntilSealed(50); // polled seldom: its queries count in the CPU figure
    const seconds = (performance.now() - started) / 1000;
    const sealingCpu = await cpuPerEvent(before, BACKLOG_EVENTS);
    await runner.stop();
    const checkpoints = await db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM audit_checkpoints WHERE employer_id LIKE 'seal%'`);
    console.log(
      `    sealing throughput, a backlog of ${BACKLOG_EVENTS} events over ${BACKLOG_EMPLOYERS} employers: ${seconds.toFixed(1)} s = ${(BACKLOG_EVENTS / seconds).toFixed(0)} events/s, ` +
        `CPU per sealed event ${sealingCpu.total.toFixed(0)} µs (this process ${sealingCpu.process.toFixed(0)}, Postgres ${sealingCpu.postgres.toFixed(0)}); ${checkpoints} checkpoints signed`,
    );
    const appendCpu = mean(without.map((run) => run.cpu.total));
    const fraction = sealingCpu.total / appendCpu;
    console.log(
      `    sealing's CPU per event / an append's without sealing: ${sealingCpu.total.toFixed(0)} / ${appendCpu.toFixed(0)} µs = ${fraction.toFixed(3)}; ` +
        `where CPU bounds the appends (as here), with/without ≈ 1 / (1 + ${fraction.toFixed(3)}) = ${(1 / (1 + fraction)).toFixed(3)} (goal >= 0.90)`,
    );
  } finally {
    await service.stopAll();
  }
}

export default auditChainSealingBench;
