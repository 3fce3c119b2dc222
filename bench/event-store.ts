// npm run bench -- event-store
// (a) Append throughput of single-event commands from 16 concurrent clients, next to plain
//     single-row INSERT transactions with the same concurrency, driver and pool, in the same run and database.
// (b) Projection rebuild throughput over 200,000 events (audit log and tenants read models), next to
//     one INSERT ... SELECT of the same rows into an unindexed table (the physical pace of writing them).
// (c) Read-your-writes command latency while `projections rebuild tenants` (the CLI, a process of its
//     own) rebuilds over 100,000 events, next to the same commands without a rebuild.
// (d) Append throughput with the audit chain's sealing running beside the appends and without it,
//     alternated, and sealing throughput in events/s (bench/audit-chain.ts).
// (e) The cohort upload of `npm run bench -- fhir` (a), on a service of its own (bench/cohort-upload.ts).
import { spawn } from 'node:child_process';
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'slonik';
import { z } from 'zod';
import { rebuildProjection } from '../projections/rebuild.ts';
import { capabilities } from '../src/capabilities.ts';
import type { Database } from '../src/db/pools.ts';
import { START, type RecordedEvent } from '../src/event-store/port.ts';
import { eventRegistryOf } from '../src/main.ts';
import { registerUser } from '../src/tenants/commands.ts';
import { sealProfileFields } from '../src/tenants/events.ts';
import { auditChainSealingBench } from './audit-chain.ts';
import { cohortUploadBench } from './cohort-upload.ts';
import { percentile, startBenchService, runConcurrently } from './support.ts';

const CONCURRENCY = 16;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const REBUILD_EVENTS = Number(process.env.BENCH_REBUILD_EVENTS ?? 200_000);
const UNDER_LOAD_EVENTS = Number(process.env.BENCH_UNDER_LOAD_EVENTS ?? 100_000);
const UNDER_LOAD_CLIENTS = 4;

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
    const profile = { email: 'u1@example.test', userName: 'u1@example.test', givenName: 'Given', familyName: 'Family', displayName: null, externalId: 'ext-1' };
    const registered = {
      userId: 'u1', employerId: 'emp1', role: 'PATIENT', active: true, source: 'scim',
      personal: { sealed: sealProfileFields(profile, createSecretKey(randomBytes(32)), 'emp1', 'u1') },
    };
    const stored: RecordedEvent = {
      eventId: randomUUID(), type: 'UserRegistered', data: registered, metadata: { ...metadata('emp1'), schemaVersion: 2 },
      streamName: 'tenant-emp1.user-u1', streamRevision: 0n, position: START, recordedAt: new Date().toISOString(),
    };
    const encodeMicros = perEventMicros(100_000, () => registry.encode({ type: 'UserRegistered', data: registered }));
    const parseMicros = perEventMicros(100_000, () => registry.parse(stored));
    console.log(`    schemas, CPU per UserRegistered event: validate on append ${encodeMicros.toFixed(2)} µs, parse on read ${parseMicros.toFixed(2)} µs`);

    const seedStart = performance.now();
    await seedRegistrations(db, REBUILD_EVENTS);
    const total = await db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM events WHERE type IN ('EmployerCreated', 'UserRegistered')`);
    console.log(`(b) seeded ${total} events in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

    for (const projection of service.projections.filter((p) => p.name === 'audit' || p.name === 'tenants')) {
      const started = performance.now();
      const result = await rebuildProjection({ db, eventStore, projection });
      const seconds = (performance.now() - started) / 1000;
      // The reference: the rows the rebuild wrote, written again in one statement into a table with no index.
      const reference = await physicalReference(db, projection.tables);
      const rebuildRowsPerSecond = reference.rows / seconds;
      console.log(`    rebuild ${projection.name.padEnd(8)}: ${result.eventsApplied} events applied in ${seconds.toFixed(1)} s = ${(Number(total) / seconds).toFixed(0)} events/s read and applied (goal >= 25000)`);
      console.log(`      reference, one INSERT ... SELECT of its ${reference.rows} rows into unindexed tables: ${reference.seconds.toFixed(2)} s = ${(reference.rows / reference.seconds).toFixed(0)} rows/s; ratio rebuild/reference: ${(rebuildRowsPerSecond / (reference.rows / reference.seconds)).toFixed(2)}`);
    }
  } finally {
    await service.stopAll();
  }
  await commandsDuringRebuild();
  console.log('(d) audit-chain sealing beside the appends (a database of its own)');
  await auditChainSealingBench();
  await cohortUploadBench('(e)');
}

/**
 * Registrations in bulk, straight into the events table, one new stream (revision 0) per event:
 * an employer for every 200 events, the rest users.
 */
async function seedRegistrations(db: Database, events: number) {
  const employers = Math.ceil(events / 200);
  const perEmployer = Math.ceil(events / employers);
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
}

/** Seconds to copy the rows of `tables` in one INSERT ... SELECT each into new tables with no index. */
async function physicalReference(db: Database, tables: string[]) {
  let rows = 0;
  let seconds = 0;
  for (const table of tables) {
    const copy = sql.identifier([`bench_reference_${table}`]);
    await db.slonik.query(sql.unsafe`CREATE TABLE ${copy} (LIKE ${sql.identifier(['public', table])})`);
    const started = performance.now();
    const { rowCount } = await db.slonik.query(sql.unsafe`INSERT INTO ${copy} SELECT * FROM ${sql.identifier(['public', table])}`);
    seconds += (performance.now() - started) / 1000;
    rows += rowCount;
    await db.slonik.query(sql.unsafe`DROP TABLE ${copy}`);
  }
  return { rows, seconds };
}

/**
 * (c) Commands that wait for their read models (a user registration: tenants and audit), from
 * UNDER_LOAD_CLIENTS clients back to back, first alone, then from the rebuild's first batch to its end.
 */
async function commandsDuringRebuild() {
  const service = await startBenchService({ roles: ['projections'] });
  const { ctx } = service;
  try {
    await seedRegistrations(ctx.db, UNDER_LOAD_EVENTS);
    const seededUpTo = await ctx.db.slonik.one(sql.type(z.object({ commit: z.bigint(), prepare: z.bigint() }))`
      SELECT transaction_id::text::bigint AS commit, global_position AS prepare FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1`);
    while (!(await ctx.waitForReadModels(seededUpTo, ['tenants', 'audit'])));

    const employerId = 'emp1';
    const context = { tenantId: employerId, actor: { type: 'system' as const, id: 'bench' } };
    const register = (email: string) =>
      registerUser(ctx.commands, context, {
        employerId,
        role: 'PATIENT',
        profile: { email, userName: email, givenName: 'Bench', familyName: 'Load', displayName: null, externalId: null },
        active: true,
        source: 'scim',
      });
    const measure = async (until: Promise<unknown>) => {
      const latencies: number[] = [];
      let running = true;
      void until.finally(() => (running = false));
      await Promise.all(
        Array.from({ length: UNDER_LOAD_CLIENTS }, async () => {
          while (running) {
            const started = performance.now();
            await register(`bench-${randomUUID()}@example.test`);
            latencies.push(performance.now() - started);
          }
        }),
      );
      return latencies.sort((a, b) => a - b);
    };
    const report = (label: string, latencies: number[]) =>
      console.log(`    ${label}: ${latencies.length} commands, p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${latencies[latencies.length - 1]!.toFixed(0)} ms`);

    console.log(`(c) read-your-writes user registrations, ${UNDER_LOAD_CLIENTS} clients back to back, ${UNDER_LOAD_EVENTS} events in the log`);
    report('without a rebuild (5 s)     ', await measure(new Promise((resolve) => setTimeout(resolve, 5000))));

    const cli = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.ts'), 'projections', 'rebuild', 'tenants'], {
      env: { ...process.env, DATABASE_URL: ctx.db.connectionUri, DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-bench-rebuild-')), LOG_LEVEL: 'silent' },
    });
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => cli.on('exit', resolve));
    // Its progress lines (stderr, not a terminal) start with its first batch.
    await Promise.race([exited, new Promise<void>((resolve) => cli.stderr.on('data', (chunk) => /events \(/.test((stderr += chunk)) && resolve()))]);
    const during = await measure(exited);
    if ((await exited) !== 0) throw new Error(`the rebuild failed:\n${stderr}`);
    report('during the rebuild (CLI)    ', during);
    console.log(`    ${stdout.trim()}`);
    console.log(`    p99 during the rebuild: ${percentile(during, 99).toFixed(0)} ms (goal < 1000 ms)`);
  } finally {
    await service.stopAll();
  }
}
