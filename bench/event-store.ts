// npm run bench -- event-store
// (a) Append throughput of single-event commands from 16 concurrent clients, next to plain
//     single-row INSERT transactions with the same concurrency, driver and pool, in the same run and database.
// (b) Projection rebuild throughput over 200,000 events (audit log and tenants read models).
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { rebuildProjection } from '../projections/rebuild.ts';
import { capabilities } from '../src/capabilities.ts';
import { START, type RecordedEvent } from '../src/event-store/port.ts';
import { eventRegistryOf } from '../src/main.ts';
import { startBenchService, runConcurrently } from './support.ts';

const CONCURRENCY = 16;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const REBUILD_EVENTS = Number(process.env.BENCH_REBUILD_EVENTS ?? 200_000);

export default async function eventStoreBench(): Promise<void> {
  const service = await startBenchService({ roles: [] });
  const { eventStore, db } = service.ctx;
  try {
    await db.slonik.query(sql.unsafe`CREATE TABLE bench_plain_inserts (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, data jsonb NOT NULL)`);
    const metadata = (tenantId: string) => ({
      tenantId,
      actor: { type: 'system' as const, id: 'bench' },
      correlationId: randomUUID(),
      causationId: null,
      schemaVersion: 1,
      occurredAt: new Date().toISOString(),
    });

    // Warm both paths so neither pays for connection set-up in the measurement.
    await runConcurrently(CONCURRENCY, 500, async () => void (await db.eventStore.query('SELECT 1')));

    const plain = await runConcurrently(CONCURRENCY, DURATION_MS, async (worker, i) => {
      await db.eventStore.query('INSERT INTO bench_plain_inserts (data) VALUES ($1)', [JSON.stringify({ worker, i, name: 'Acme' })]);
    });
    const appends = await runConcurrently(CONCURRENCY, DURATION_MS, async (worker, i) => {
      const tenantId = `bench${worker}`;
      // A registered event type: the append validates it against its schema, as every command's does.
      const employerId = `${worker}-${i}`;
      await eventStore.appendToStream(`tenant-${tenantId}.employer-${randomUUID()}`, [{ type: 'EmployerCreated', data: { employerId, name: 'Acme', createdAt: new Date().toISOString() } }], {
        expectedRevision: 'no_stream',
        metadata: metadata(tenantId),
      });
    });
    console.log(`(a) append, ${CONCURRENCY} concurrent clients, ${DURATION_MS / 1000} s each`);
    console.log(`    plain single-row INSERT transactions: ${plain.perSecond.toFixed(0)} /s (p50 ${plain.p50.toFixed(2)} ms, p99 ${plain.p99.toFixed(2)} ms)`);
    console.log(`    event store single-event appends:     ${appends.perSecond.toFixed(0)} events/s (p50 ${appends.p50.toFixed(2)} ms, p99 ${appends.p99.toFixed(2)} ms)`);
    console.log(`    ratio append/plain: ${(appends.perSecond / plain.perSecond).toFixed(2)} (goal >= 0.5)`);

    // What event schemas cost the CPU, apart from the database: validating an append, parsing a read.
    const registry = eventRegistryOf(capabilities);
    const perEventMicros = (count: number, run: (i: number) => void) => {
      for (let i = 0; i < 1000; i++) run(i);
      const started = performance.now();
      for (let i = 0; i < count; i++) run(i);
      return ((performance.now() - started) * 1000) / count;
    };
    const registered = {
      userId: 'u1', employerId: 'emp1', role: 'PATIENT', active: true, source: 'scim', email: 'u1@example.test', userName: 'u1@example.test',
      givenName: 'Given', familyName: 'Family', displayName: null, externalId: 'ext-1',
    };
    const stored: RecordedEvent = {
      eventId: randomUUID(), type: 'UserRegistered', data: registered, metadata: { ...metadata('emp1'), schemaVersion: 1 },
      streamName: 'tenant-emp1.user-u1', streamRevision: 0n, position: START, recordedAt: new Date().toISOString(),
    };
    const encodeMicros = perEventMicros(100_000, () => registry.encode({ type: 'UserRegistered', data: registered }));
    const parseMicros = perEventMicros(100_000, () => registry.parse(stored));
    console.log(`    schemas, CPU per UserRegistered event: validate on append ${encodeMicros.toFixed(2)} µs, parse on read ${parseMicros.toFixed(2)} µs`);

    // Seed employers and users in bulk, one new stream (revision 0) per event, straight into the table.
    const employers = 1000;
    const perEmployer = Math.ceil(REBUILD_EVENTS / employers);
    const seedStart = performance.now();
    await db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), 'tenant-emp' || e || '.employer-emp' || e, 0, 'emp' || e, 'EmployerCreated',
        jsonb_build_object('employerId', 'emp' || e, 'name', 'Employer ' || e, 'createdAt', now()),
        jsonb_build_object('tenantId', 'emp' || e, 'actor', jsonb_build_object('type', 'system', 'id', 'bench'), 'correlationId', gen_random_uuid(),
          'causationId', null, 'schemaVersion', 1, 'occurredAt', now())
      FROM generate_series(1, ${employers}) AS e`);
    await db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), 'tenant-emp' || e || '.user-u' || e || '-' || u, 0, 'emp' || e, 'UserRegistered',
        jsonb_build_object('userId', 'u' || e || '-' || u, 'employerId', 'emp' || e, 'role', 'PATIENT', 'active', true, 'source', 'scim',
          'email', 'u' || e || '-' || u || '@example.test', 'userName', 'u' || e || '-' || u || '@example.test', 'givenName', 'Given',
          'familyName', 'Family', 'displayName', null, 'externalId', 'ext-' || u),
        jsonb_build_object('tenantId', 'emp' || e, 'actor', jsonb_build_object('type', 'scimToken', 'id', 'bench'), 'correlationId', gen_random_uuid(),
          'causationId', null, 'schemaVersion', 1, 'occurredAt', now())
      FROM generate_series(1, ${employers}) AS e, generate_series(1, ${perEmployer - 1}) AS u`);
    const total = await db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM events WHERE type IN ('EmployerCreated', 'UserRegistered')`);
    console.log(`(b) seeded ${total} events in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

    for (const projection of service.projections.filter((p) => p.name === 'audit' || p.name === 'tenants')) {
      const started = performance.now();
      const result = await rebuildProjection({ db, eventStore, projection });
      const seconds = (performance.now() - started) / 1000;
      console.log(`    rebuild ${projection.name.padEnd(8)}: ${result.eventsApplied} events applied in ${seconds.toFixed(1)} s = ${(Number(total) / seconds).toFixed(0)} events/s read and applied (goal >= 25000)`);
    }
  } finally {
    await service.stopAll();
  }
}
