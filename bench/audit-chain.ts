// npm run bench -- audit-chain
// (a) Append throughput of single-event commands from 16 concurrent clients over 16 tenants, with the
//     audit-chain sealing projection running beside them in the same process and without it,
//     alternated (off, on, off, on) in the same database; also how far sealing lags when appends stop.
// (b) Sealing throughput: events/s sealed (hashed, stored, checkpointed every 1,000 per employer)
//     from a backlog of 100,000 events over 100 employers.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { AUDIT_CHAIN_PROJECTION } from '../projections/audit-chain/projection.ts';
import { readCheckpoint, startProjectionRunner } from '../projections/runner.ts';
import { comparePositions } from '../src/event-store/port.ts';
import { runConcurrently, startBenchService } from './support.ts';

const CONCURRENCY = 16;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 6000);
const BACKLOG_EVENTS = Number(process.env.BENCH_SEAL_EVENTS ?? 100_000);

export default async function auditChainBench(): Promise<void> {
  const service = await startBenchService({ roles: [] });
  const { eventStore, db, notifications } = service.ctx;
  const chain = service.projections.find((projection) => projection.name === AUDIT_CHAIN_PROJECTION)!;
  const startSealing = () =>
    startProjectionRunner({ pool: db.slonik, eventStore, notifications, projections: [chain], onError: (_, error) => console.error(error) });
  const sealedUpToHead = async () => comparePositions(await readCheckpoint(db.slonik, AUDIT_CHAIN_PROJECTION), await eventStore.headPosition()) >= 0;
  const waitUntilSealed = async () => {
    while (!(await sealedUpToHead())) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  try {
    const append = async (worker: number, i: number) => {
      const tenantId = `bench${worker}`;
      await eventStore.appendToStream(`tenant-${tenantId}.thing-${randomUUID()}`, [{ type: 'ThingHappened', data: { worker, i, name: 'Acme' } }], {
        expectedRevision: 'no_stream',
        metadata: { tenantId, actor: { type: 'system', id: 'bench' }, correlationId: randomUUID(), causationId: null, occurredAt: new Date().toISOString() },
      });
    };
    await runConcurrently(CONCURRENCY, 1000, append); // warm-up

    const without: number[] = [];
    const withSealing: number[] = [];
    const lags: number[] = [];
    for (let round = 0; round < 2; round++) {
      without.push((await runConcurrently(CONCURRENCY, DURATION_MS, append)).perSecond);
      const runner = await startSealing();
      await waitUntilSealed();
      withSealing.push((await runConcurrently(CONCURRENCY, DURATION_MS, append)).perSecond);
      const stoppedAt = performance.now();
      await waitUntilSealed();
      lags.push(performance.now() - stoppedAt);
      await runner.stop();
    }
    const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
    console.log(`(a) single-event appends, ${CONCURRENCY} clients over ${CONCURRENCY} tenants, ${DURATION_MS / 1000} s per run, alternated`);
    console.log(`    without sealing: ${without.map((value) => value.toFixed(0)).join(', ')} events/s (mean ${mean(without).toFixed(0)})`);
    console.log(`    with sealing:    ${withSealing.map((value) => value.toFixed(0)).join(', ')} events/s (mean ${mean(withSealing).toFixed(0)})`);
    console.log(`    ratio with/without: ${(mean(withSealing) / mean(without)).toFixed(3)} (goal >= 0.90); sealing caught up ${lags.map((lag) => lag.toFixed(0)).join(', ')} ms after appends stopped`);

    const employers = 100;
    await db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), 'tenant-seal' || (n % ${employers}) || '.thing-' || n, 0, 'seal' || (n % ${employers}), 'ThingHappened',
        jsonb_build_object('n', n, 'name', 'Employer ' || (n % ${employers}), 'note', repeat('x', 100)),
        jsonb_build_object('tenantId', 'seal' || (n % ${employers}), 'actor', jsonb_build_object('type', 'system', 'id', 'bench'), 'correlationId', gen_random_uuid(),
          'causationId', null, 'schemaVersion', 1, 'occurredAt', now())
      FROM generate_series(1, ${BACKLOG_EVENTS}) AS n`);
    const started = performance.now();
    const runner = await startSealing();
    await waitUntilSealed();
    const seconds = (performance.now() - started) / 1000;
    await runner.stop();
    const checkpoints = await db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM audit_checkpoints WHERE employer_id LIKE 'seal%'`);
    console.log(`(b) sealing a backlog of ${BACKLOG_EVENTS} events over ${employers} employers: ${seconds.toFixed(1)} s = ${(BACKLOG_EVENTS / seconds).toFixed(0)} events/s (${checkpoints} checkpoints signed)`);
  } finally {
    await service.stopAll();
  }
}
