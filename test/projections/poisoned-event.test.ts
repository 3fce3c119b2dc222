// The poisoned-event test: one tenant's event that a projection cannot apply, in the real service.
// It is parked, every other tenant's commands go on (their read-your-writes wait succeeds), the
// operator sees it in `projections status` and /readyz, and `projections retry` applies it after a fix.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listParked } from '../../projections/parking.ts';
import type { Projection } from '../../src/event-store/projection.ts';
import { retryParkedEvents } from '../../projections/runner.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { startTestService, type TestService } from '../support/service.ts';

const run = promisify(execFile);
const POISONED_PREFIX = 'Poisoned';

/**
 * A read model of employers awaited by commands, whose table refuses some names by a CHECK
 * constraint: a real failing statement for one tenant's events only, which the test can lift.
 */
const probeProjection: Projection = {
  name: 'poison-probe',
  tables: ['poison_probe'],
  eventTypes: ['EmployerCreated'],
  awaitedByCommands: true,
  async apply(tx, events) {
    const rows = events.map(({ data }) => ({ employer_id: data.employerId, name: data.name }));
    await tx.query(sql.unsafe`
      INSERT INTO poison_probe (employer_id, name)
      SELECT employer_id, name FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(employer_id text, name text)`);
  },
};

describe('poisoned event', () => {
  let service: TestService;
  let databaseUri: string;
  const logLines: string[] = [];
  const sqlOnDatabase = async (text: string) => {
    const client = new pg.Client({ connectionString: databaseUri });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    databaseUri = await createTestDatabaseUri();
    await sqlOnDatabase(`CREATE TABLE poison_probe (
      employer_id text PRIMARY KEY,
      name text NOT NULL CONSTRAINT poison_probe_refuses_name CHECK (name NOT LIKE '${POISONED_PREFIX}%'))`);
    service = await startTestService({
      databaseUri,
      extraProjections: [probeProjection],
      // Long on purpose: a command held up by the poisoned event would wait it out, and say so in the log.
      env: { PROJECTION_WAIT_TIMEOUT_MS: '30000' },
      logDestination: { write: (line: string) => void logLines.push(line) },
    });
  });
  afterAll(async () => service?.stop());

  const probeRow = (employerId: string) =>
    service.ctx.db.slonik.maybeOne(sql.type(z.object({ employer_id: z.string() }))`SELECT employer_id FROM poison_probe WHERE employer_id = ${employerId}`);
  const readiness = async () => {
    const response = await fetch(`${service.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };
  const logged = (message: string) => logLines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === message);

  it("parks one tenant's bad event while other tenants' commands go on; status and readyz show it; retry applies it after a fix", async () => {
    const before = await service.createTenant();
    expect(await probeRow(before.employerId)).toEqual({ employer_id: before.employerId });

    // The poisoned tenant's own creation: its command returns too, since the checkpoint passes the parked event.
    const poisoned = await service.createTenant({ name: `${POISONED_PREFIX} ${Date.now()}` });
    const after = await service.createTenant();
    // The next tenant's command waited for the probe and found its row, and no wait ran out (a timeout
    // is logged): read-your-writes held for it, behind the poisoned event.
    expect(await probeRow(after.employerId)).toEqual({ employer_id: after.employerId });
    expect(await probeRow(poisoned.employerId)).toBeNull();
    expect(logged('read models lag behind a command')).toEqual([]);
    // And the read models are past everything written: a wait for the newest event returns at once, true.
    expect(await service.ctx.waitForReadModels(await service.ctx.eventStore.headPosition(), ['poison-probe', 'tenants'])).toBe(true);

    const [parked, ...others] = await listParked(service.ctx.db.slonik, { limit: 10 });
    expect(others).toEqual([]);
    expect(parked).toMatchObject({ projection: 'poison-probe', tenant_id: poisoned.employerId, event_type: 'EmployerCreated', attempts: 4 });
    expect(parked!.error).toMatch(/violates check constraint "poison_probe_refuses_name"/);
    expect(logged('projection parked an event; see npm run cli -- projections status')).toMatchObject([{ projection: 'poison-probe', tenantId: poisoned.employerId }]);

    expect(await readiness()).toEqual({ status: 200, body: { status: 'degraded', database: 'ok', stalledProjections: [], lag: {}, parkedEvents: { 'poison-probe': 1 } } });

    // The operator's view, from a separate CLI process on the same database (which does not run the
    // test's projection, and still lists its parked event).
    const { stdout } = await run(process.execPath, ['src/cli.ts', 'projections', 'status', '--json'], {
      env: { ...(process.env as Record<string, string>), DATABASE_URL: databaseUri, DATA_DIR: service.ctx.config.DATA_DIR, LOG_LEVEL: 'silent' },
      cwd: process.cwd(),
    });
    const status = JSON.parse(stdout);
    expect(status.projections).toEqual(expect.arrayContaining([
      expect.objectContaining({ projection: 'poison-probe', parkedEvents: 1 }),
      expect.objectContaining({ projection: 'tenants', parkedEvents: 0, pendingEvents: 0 }),
    ]));
    expect(status.parked).toMatchObject([{ event_id: parked!.event_id, tenant_id: poisoned.employerId }]);

    // Retried before the fix: still parked, one attempt more.
    expect(await retryParkedEvents({ pool: service.ctx.db.slonik, eventStore: service.ctx.eventStore, projection: probeProjection })).toEqual({ applied: 0, stillParked: 1 });
    expect(await listParked(service.ctx.db.slonik, { limit: 10 })).toMatchObject([{ event_id: parked!.event_id, attempts: 5 }]);

    await sqlOnDatabase('ALTER TABLE poison_probe DROP CONSTRAINT poison_probe_refuses_name');
    expect(await retryParkedEvents({ pool: service.ctx.db.slonik, eventStore: service.ctx.eventStore, projection: probeProjection })).toEqual({ applied: 1, stillParked: 0 });
    expect(await probeRow(poisoned.employerId)).toEqual({ employer_id: poisoned.employerId });
    expect(await listParked(service.ctx.db.slonik, { limit: 10 })).toEqual([]);
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ok', database: 'ok' } });
  }, 90_000);
});
