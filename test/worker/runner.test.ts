// The supervised graphile-worker runner replaces a runner that can fetch no job: graphile-worker
// keeps the failure of its first task registration (no connection within the pool's wait, at a busy
// start-up) and fails every fetch with it afterwards.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWorker, type WorkerRunner } from '../../src/worker/runner.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { waitUntil } from '../webhooks/helpers.ts';

/**
 * A real pool that gives its first connection (the runner's start-up checks) and then refuses, as a
 * pool that waited too long refuses, until `open()`.
 */
class RefusingPool extends pg.Pool {
  private given = 0;
  private refusing = true;
  open() {
    this.refusing = false;
  }
  override connect(...args: never[]): any {
    if (this.refusing && this.given++ >= 1) {
      const refusal = new Error('timeout exceeded when trying to connect');
      // As pg-pool answers: through the callback when given one (its own query() passes one).
      const callback = args[0] as ((error: Error) => void) | undefined;
      if (typeof callback === 'function') return void process.nextTick(() => callback(refusal));
      return Promise.reject(refusal);
    }
    return (super.connect as (...a: never[]) => unknown)(...args);
  }
}

let pool: RefusingPool;
let worker: WorkerRunner | undefined;
beforeAll(async () => {
  pool = new RefusingPool({ connectionString: await createTestDatabaseUri(), max: 4 });
});
afterAll(async () => {
  await worker?.stop();
  await pool?.end();
});

it('replaces a runner whose job fetches keep failing after a start-up without connections, and then runs the jobs', async () => {
  const ran: string[] = [];
  const restarts: unknown[] = [];
  let firstFetchFailed: () => void = () => {};
  const fetchFailed = new Promise<void>((resolve) => (firstFetchFailed = resolve));
  worker = await startWorker({
    pgPool: pool,
    tasks: { test_job: async (payload) => void ran.push((payload as { name: string }).name) },
    onError: (message) => {
      if (message.startsWith('Error occurred fetching jobs')) firstFetchFailed();
    },
    onRestart: (reason) => restarts.push(reason),
  });
  await fetchFailed;
  pool.open(); // the database answers from now on; the first runner's cached failure stays

  const admin = new pg.Client({ connectionString: pool.options.connectionString });
  await admin.connect();
  try {
    await admin.query(`SELECT graphile_worker.add_job('test_job', '{"name":"after the refusals"}'::json)`);
    await waitUntil('the job queued after the refusals to run', () => ran.length > 0, 30_000);
  } finally {
    await admin.end();
  }
  expect(ran).toEqual(['after the refusals']);
  expect(String(restarts[0])).toMatch(/job fetches failed in a row/);
});
