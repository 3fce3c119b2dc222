// Committed events become worker jobs exactly once per (event, consumer), across a restart of the
// process that dispatches and runs them.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import type { Capability } from '../../src/capability.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { startTestService, type TestService } from '../support/service.ts';

/** A consumer whose task records each run in a table, so duplicates and losses are countable. */
const recordingCapability: Capability = {
  name: 'test-recorder',
  consumers: [{ name: 'test-recorder', eventTypes: ['EmployerCreated'], task: 'test_record_event' }],
  tasks: (ctx) => ({
    test_record_event: async (payload) => {
      const { eventId } = payload as { eventId: string };
      await ctx.db.pg.query('INSERT INTO test_job_runs (event_id) VALUES ($1)', [eventId]);
    },
  }),
};

describe('job dispatch', () => {
  let databaseUri: string;
  let admin: pg.Client;
  beforeAll(async () => {
    databaseUri = await createTestDatabaseUri();
    admin = new pg.Client({ connectionString: databaseUri });
    await admin.connect();
    await admin.query('CREATE TABLE test_job_runs (event_id uuid NOT NULL, ran_at timestamptz NOT NULL DEFAULT now())');
  });
  afterAll(async () => admin?.end());

  const runsUntil = async (expected: number) => {
    for (let attempt = 0; attempt < 1000; attempt++) {
      const { rows } = await admin.query('SELECT count(*)::int AS n FROM test_job_runs');
      if (rows[0].n >= expected) return rows[0].n as number;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`fewer than ${expected} job runs`);
  };

  it('runs each event\'s job exactly once across a restart', async () => {
    const start = () => startTestService({ databaseUri, capabilities: [...capabilities, recordingCapability] });
    let service: TestService = await start();
    for (let i = 0; i < 5; i++) await service.createTenant();
    await runsUntil(5);
    await service.stop();

    // Events committed while no worker or dispatcher runs are picked up after the restart.
    const offline = await startTestService({ databaseUri, capabilities: [...capabilities, recordingCapability], roles: ['api'], env: { PROJECTION_WAIT_TIMEOUT_MS: '20' } });
    for (let i = 0; i < 3; i++) await offline.createTenant().catch(() => undefined); // sign-in needs projections; the events commit regardless
    await offline.stop();

    service = await start();
    for (let i = 0; i < 4; i++) await service.createTenant();
    await runsUntil(12);
    await service.stop();

    const { rows: events } = await admin.query(`SELECT event_id FROM events WHERE type = 'EmployerCreated'`);
    const { rows: runs } = await admin.query('SELECT event_id, count(*)::int AS n FROM test_job_runs GROUP BY event_id');
    expect(events).toHaveLength(12);
    expect(runs).toHaveLength(12);
    expect(runs.every((run) => run.n === 1)).toBe(true);
    expect(new Set(runs.map((run) => run.event_id))).toEqual(new Set(events.map((event) => event.event_id)));
  });
});
