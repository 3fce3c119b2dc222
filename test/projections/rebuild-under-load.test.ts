// A rebuild over 100,000 events while a steady stream of read-your-writes commands runs against the
// service: no command may wait on the rebuild (a long rebuild transaction would hold back every event
// reader, so every live projection, so every command).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { START } from '../../src/event-store/port.ts';
import { registerUser } from '../../src/tenants/commands.ts';
import { emailHash } from '../../src/tenants/email-reservation.ts';
import { startTestService, type TestService } from '../support/service.ts';

const SEEDED_EVENTS = 100_000;
const COMMAND_CLIENTS = 2;

describe('rebuild under load', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.stop());

  it('keeps every read-your-writes command under a second while the tenants model is rebuilt over 100,000 events', async () => {
    const { ctx } = service;
    const { employerId } = await service.createTenant();
    const countUsers = () => ctx.db.slonik.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM users WHERE employer_id = ${employerId}`);

    // Seed: 50,000 copies of the append a real registration made (the e-mail reservation and the
    // UserRegistered), with only the user id, e-mail address (and its hash) and correlation id changed, in
    // one INSERT ... SELECT into the event store's table: 100,000 events as its append writes them. The
    // UserRegistered copies are written as version 1 did (profile in clear), since a copy of a sealed
    // profile would open under no user's key. The live projections then follow as they would after any append.
    const registration = (await ctx.eventStore.readAll({ after: START, tenantId: employerId })).find((event) => event.type === 'UserRegistered')!;
    const { userId } = registration.data as { userId: string };
    const email = (await ctx.db.slonik.oneFirst(sql.type(z.object({ email: z.string() }))`SELECT email FROM users WHERE id = ${userId}`));
    await ctx.db.slonik.query(sql.unsafe`
      WITH copy AS (
        SELECT n, gen_random_uuid()::text AS user_id, 'seeded-' || n || '@example.test' AS email, gen_random_uuid()::text AS correlation_id
        FROM generate_series(1, ${SEEDED_EVENTS / 2}) AS n),
      original AS (SELECT * FROM events WHERE transaction_id = ${registration.position.commit.toString()}::xid8)
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), replace(replace(o.stream_name, ${emailHash(email)}, encode(sha256(convert_to(c.email, 'UTF8')), 'hex')), ${userId}, c.user_id),
        o.stream_revision, o.tenant_id, o.type,
        CASE WHEN o.type = 'UserRegistered'
          THEN (o.data - 'personal') || jsonb_build_object('userId', c.user_id, 'email', c.email, 'userName', c.email, 'givenName', 'Seeded',
                 'familyName', 'User', 'displayName', null, 'externalId', null)
          ELSE replace(replace(o.data::text, ${emailHash(email)}, encode(sha256(convert_to(c.email, 'UTF8')), 'hex')), ${userId}, c.user_id)::jsonb END,
        replace(o.metadata::text, ${registration.metadata.correlationId}, c.correlation_id)::jsonb
          || CASE WHEN o.type = 'UserRegistered' THEN '{"schemaVersion": 1}'::jsonb ELSE '{}'::jsonb END
      FROM copy c CROSS JOIN original o
      ORDER BY c.n, o.global_position`);
    const seededUpTo = await ctx.db.slonik.one(sql.type(z.object({ commit: z.bigint(), prepare: z.bigint() }))`
      SELECT transaction_id::text::bigint AS commit, global_position AS prepare FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1`);
    const caughtUpBy = Date.now() + 180_000;
    while (!(await ctx.waitForReadModels(seededUpTo, ['tenants', 'audit']))) expect(Date.now()).toBeLessThan(caughtUpBy);
    expect(await countUsers()).toBe(SEEDED_EVENTS / 2 + 1);

    const context = { tenantId: employerId, actor: { type: 'system' as const, id: 'load' } };
    const register = async (email: string) => {
      const started = performance.now();
      const { userId } = await registerUser(ctx.commands, context, {
        employerId,
        role: 'PATIENT',
        profile: { email, userName: email, givenName: 'Load', familyName: 'Test', displayName: null, externalId: null },
        active: true,
        source: 'scim',
      });
      const waited = performance.now() - started;
      // Read-your-writes: the command returned once the read model had its user.
      const visible = await ctx.db.slonik.exists(sql.unsafe`SELECT 1 FROM users WHERE id = ${userId}`);
      return { waited, visible };
    };

    // The operator's rebuild, in a process of its own as `npm run cli -- projections rebuild tenants` runs
    // it, against the service's database; commands keep coming from its first batch to its swap.
    // With the service's ENCRYPTION_KEY, as an operator's would be: it opens the users' data keys.
    const env = {
      ...process.env, DATABASE_URL: ctx.db.connectionUri, DATA_DIR: await mkdtemp(join(tmpdir(), 'ei-rebuild-')), LOG_LEVEL: 'silent',
      ENCRYPTION_KEY: ctx.encryptionKey.export().toString('base64'),
    };
    const cli = spawn(process.execPath, ['src/cli.ts', 'projections', 'rebuild', 'tenants'], { env, cwd: process.cwd() });
    onTestFinished(() => void cli.kill()); // a no-op once it has exited
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => cli.on('exit', resolve));
    // Its progress lines (stderr, not a terminal) start with the first batch.
    const firstBatchDone = new Promise<void>((resolve) =>
      cli.stderr.on('data', (chunk) => {
        stderr += chunk;
        if (/rebuild tenants: \d+\/\d+ events/.test(stderr)) resolve();
      }),
    );
    await Promise.race([firstBatchDone, exited]);

    const waits: number[] = [];
    const invisible: string[] = [];
    let rebuilding = true;
    const clients = Array.from({ length: COMMAND_CLIENTS }, async (_, client) => {
      for (let i = 0; rebuilding; i++) {
        const email = `load-${client}-${i}@example.test`;
        const { waited, visible } = await register(email);
        waits.push(waited);
        if (!visible) invisible.push(email);
      }
    });
    const exitCode = await exited;
    rebuilding = false;
    await Promise.all(clients);

    expect({ exitCode, stderr }).toMatchObject({ exitCode: 0 });
    const outcome = /tenants: rebuilt from \d+ events \((\d+) applied, (\d+) parked\)/.exec(stdout);
    expect(Number(outcome?.[1])).toBeGreaterThanOrEqual(SEEDED_EVENTS / 2 + 1);
    expect(outcome?.[2]).toBe('0');
    expect(waits.length).toBeGreaterThanOrEqual(20); // a steady stream through the whole rebuild
    expect(invisible).toEqual([]);
    expect(Math.max(...waits)).toBeLessThan(1000);

    // The swapped-in model holds everything, including what the commands wrote during the rebuild, and follows on.
    const after = await register(`after-swap-${randomUUID()}@example.test`);
    expect(after.visible).toBe(true);
    expect(await countUsers()).toBe(SEEDED_EVENTS / 2 + 1 + waits.length + 1);
  }, 300_000);
});
