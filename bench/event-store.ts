// npm run bench -- event-store
// (a) Append throughput of single-event commands from 16 concurrent clients, next to plain
//     single-row INSERT transactions with the same concurrency, driver and pool, in the same run and database.
// (b) Projection rebuild throughput over 200,000 events (audit log and tenants read models), next to
//     one INSERT ... SELECT of the same rows into an unindexed table (the physical pace of writing them).
// (c) Read-your-writes command latency while `projections rebuild tenants` (the CLI, a process of its
//     own) rebuilds over 100,000 events, next to the same commands without a rebuild.
// (d) Append throughput with the audit chain's sealing running beside the appends and without it,
//     alternated, and sealing throughput in events/s (bench/audit-chain.ts).
// (e) Our event store next to Emmett's PostgreSQL event store, on the same server, each in a database
//     and a process of its own (bench/workers/event-store-peer.ts), in alternated rounds.
// (f) The cohort upload of `npm run bench -- fhir` (a), on a service of its own (bench/cohort-upload.ts).
import { spawn } from 'node:child_process';
import { createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { rebuildProjection } from '../projections/rebuild.ts';
import { capabilities } from '../src/capabilities.ts';
import type { Database } from '../src/db/pools.ts';
import { START, type RecordedEvent } from '../src/event-store/port.ts';
import { eventRegistryOf } from '../src/main.ts';
import { registerUser } from '../src/tenants/commands.ts';
import { sealProfileFields } from '../src/tenants/events.ts';
import { migrate } from '../src/db/migrate.ts';
import { auditChainSealingBench } from './audit-chain.ts';
import { percentile, startBenchDatabase, startBenchService, startCpuClock, runConcurrently } from './support.ts';
import { cohortUploadBench } from './cohort-upload.ts';
import { CONCURRENCY as PEER_CONCURRENCY, eventMetadata, READ_ALL_EVENTS, STREAM_EVENTS, peerScript, type RoundResult } from './workers/event-store-peer.ts';

const CONCURRENCY = 16;
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const REBUILD_EVENTS = Number(process.env.BENCH_REBUILD_EVENTS ?? 200_000);
const UNDER_LOAD_EVENTS = Number(process.env.BENCH_UNDER_LOAD_EVENTS ?? 100_000);
const UNDER_LOAD_CLIENTS = 4;
const PEER_ROUND_MS = Number(process.env.BENCH_PEER_ROUND_MS ?? 3000);

/** `npm run bench -- event-store [emmett]`: everything, or only (e). */
export default async function eventStoreBench(args: string[] = []): Promise<void> {
  if (args[0] === 'emmett') return besideEmmett();
  const service = await startBenchService({ roles: [] });
  const { eventStore, db } = service.ctx;
  try {
    await db.slonik.query(sql.unsafe`CREATE TABLE bench_plain_inserts (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, data jsonb NOT NULL)`);

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
        metadata: eventMetadata(tenantId),
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
      eventId: randomUUID(), type: 'UserRegistered', data: registered, metadata: { ...eventMetadata('emp1'), schemaVersion: 2 },
      streamName: 'tenant-emp1.user-u1', streamRevision: 0n, position: START, recordedAt: new Date().toISOString(),
    };
    const encodeMicros = perEventMicros(100_000, () => registry.encode({ type: 'UserRegistered', data: registered }));
    const parseMicros = perEventMicros(100_000, () => registry.parse(stored));
    console.log(`    schemas, CPU per UserRegistered event: validate on append ${encodeMicros.toFixed(2)} µs, parse on read ${parseMicros.toFixed(2)} µs`);

    const seedStart = performance.now();
    await seedRegistrations(db, REBUILD_EVENTS);
    const total = await db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM events WHERE type IN ('EmployerCreated', 'UserRegistered')`);
    console.log(`(b) seeded ${total} events in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

    const cpuClock = await startCpuClock(db.eventStore);
    const cpuMicrosSince = async (start: { process: number; postgres: number | null }, per: number) => {
      const now = await cpuClock();
      const micros = (seconds: number) => ((seconds * 1e6) / per).toFixed(0);
      return `this process ${micros(now.process - start.process)} µs, Postgres ${now.postgres === null || start.postgres === null ? '?' : micros(now.postgres - start.postgres)} µs`;
    };
    for (const projection of service.projections.filter((p) => p.name === 'audit' || p.name === 'tenants')) {
      const rebuildCpu = await cpuClock();
      const started = performance.now();
      const result = await rebuildProjection({ db, eventStore, projection });
      const seconds = (performance.now() - started) / 1000;
      const rebuildCpuPerEvent = await cpuMicrosSince(rebuildCpu, Number(total));
      // The reference: the rows the rebuild wrote, written again in one statement into a table with no index.
      const referenceCpu = await cpuClock();
      const reference = await physicalReference(db, projection.tables);
      const referenceCpuPerRow = await cpuMicrosSince(referenceCpu, reference.rows);
      const rebuildRowsPerSecond = reference.rows / seconds;
      console.log(`    rebuild ${projection.name.padEnd(8)}: ${result.eventsApplied} events applied in ${seconds.toFixed(1)} s = ${(Number(total) / seconds).toFixed(0)} events/s read and applied (goal >= 25000)`);
      console.log(`      reference, one INSERT ... SELECT of its ${reference.rows} rows into unindexed tables: ${reference.seconds.toFixed(2)} s = ${(reference.rows / reference.seconds).toFixed(0)} rows/s; ratio rebuild/reference: ${(rebuildRowsPerSecond / (reference.rows / reference.seconds)).toFixed(2)} (goal >= 0.25)`);
      // CPU per event moves less with the machine's other load than the ratio of rates does.
      console.log(`      CPU per event: rebuild ${rebuildCpuPerEvent}; reference, per row: ${referenceCpuPerRow}`);
    }
  } finally {
    await service.stopAll();
  }
  await commandsDuringRebuild();
  console.log('(d) audit-chain sealing beside the appends (a database of its own)');
  await auditChainSealingBench();
  await besideEmmett();
  await cohortUploadBench('(f)');
}

/**
 * (e) The same four workloads on our event store and on Emmett's, rounds alternated ours, Emmett,
 * Emmett, ours; each figure is the mean of its side's rounds.
 */
async function besideEmmett() {
  const database = await startBenchDatabase();
  try {
    await migrate(database.connectionUri);
    const emmettUri = new URL(database.connectionUri);
    emmettUri.pathname = `${emmettUri.pathname}_emmett`;
    const admin = new pg.Client({ connectionString: database.connectionUri });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${emmettUri.pathname.slice(1)}`);
    await admin.end();
    const uris = { ours: database.connectionUri, emmett: emmettUri.toString() };
    const run = (side: 'ours' | 'emmett', what: string) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, [peerScript, side, uris[side], what], { stdio: ['ignore', 'pipe', 'inherit'] });
        let stdout = '';
        child.stdout.on('data', (chunk) => (stdout += chunk));
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`event-store-peer.ts ${side} ${what} exited with ${code}`))));
      });
    await run('ours', 'seed');
    await run('emmett', 'seed');
    const rounds: Record<'ours' | 'emmett', RoundResult[]> = { ours: [], emmett: [] };
    for (const side of ['ours', 'emmett', 'emmett', 'ours'] as const) rounds[side].push(JSON.parse(await run(side, String(PEER_ROUND_MS))) as RoundResult);

    const mean = (side: 'ours' | 'emmett', workload: keyof RoundResult, figure: 'eventsPerSecond' | 'p50' | 'p99') =>
      rounds[side].reduce((sum, round) => sum + round[workload][figure], 0) / rounds[side].length;
    console.log(`(e) beside Emmett's PostgreSQL event store (@event-driven-io/emmett-postgresql), ${PEER_CONCURRENCY} clients, pools of ${PEER_CONCURRENCY} connections, rounds of ${PEER_ROUND_MS / 1000} s per workload alternated ours, Emmett, Emmett, ours (means)`);
    const lines: [keyof RoundResult, string, string][] = [
      ['newStreams', 'single-event appends to new streams      ', 'events/s'],
      ['existingStreams', 'appends to existing streams, expected rev', 'events/s'],
      ['readStream', `read one stream of ${STREAM_EVENTS} events           `, 'events/s'],
      ['readAll', `read all from position 0 (${READ_ALL_EVENTS} events) `, 'events/s'],
    ];
    for (const [workload, label, unit] of lines) {
      const figure = (side: 'ours' | 'emmett') =>
        `${mean(side, workload, 'eventsPerSecond').toFixed(0)} ${unit} (p50 ${mean(side, workload, 'p50').toFixed(1)} ms, p99 ${mean(side, workload, 'p99').toFixed(1)} ms)`;
      const ratio = mean('ours', workload, 'eventsPerSecond') / mean('emmett', workload, 'eventsPerSecond');
      console.log(`    ${label}: ours ${figure('ours')}, Emmett ${figure('emmett')}; ratio ours/Emmett ${ratio.toFixed(2)} (goal >= 1.0)`);
    }
    console.log(`    where the two differ:`);
    console.log(`      - append: ours validates every event against its type's schema and runs one statement; Emmett stores what it is given,`);
    console.log(`        in a transaction of its own (BEGIN, its emt_append_to_stream function, which also keeps a row per stream, COMMIT)`);
    console.log(`      - read: ours parses and upcasts every event by its schema (read one stream: strictly); Emmett returns the stored JSON`);
    console.log(`      - read all: Emmett has no public read-all; used readMessagesBatch, which its consumers and projections page with.`);
    console.log(`        Both hide events behind older running transactions (pg_snapshot_xmin); ours pages by (transaction id, position),`);
    console.log(`        Emmett by global position alone, which can skip an event of a later transaction with a lower position at a page's end`);
    console.log(`      - ours reads one tenant's events by index (tenant_id); Emmett partitions instead (not measured here)`);
  } finally {
    await database.stop();
  }
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
      // The service's encryption key: with another, the CLI could not open users' data keys and would park every sealed registration.
      env: { ...process.env, DATABASE_URL: ctx.db.connectionUri, DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-bench-rebuild-')), ENCRYPTION_KEY: ctx.config.ENCRYPTION_KEY, LOG_LEVEL: 'silent' },
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
