// At-least-once delivery across a crash. graphile-worker releases the jobs of a dead worker only
// after 4 hours, so a process killed mid-attempt would leave its delivery stuck that long. Instead:
// - every worker process holds a lease: a Postgres session advisory lock on its own connection,
//   which the server drops the moment the process dies (its socket closes);
// - an attempt records the lease and the graphile-worker worker id on the delivery row when it starts;
// - recoverInterruptedAttempts finds attempts whose lease is no longer held, unlocks their jobs with
//   graphile-worker's force_unlock_workers (meant for exactly this: workers known to be dead) and
//   wakes the workers, so the same job runs again: same delivery, same x-webhook-id.
// It runs when a worker process starts and then every minute (RECOVER_TASK reschedules itself).
import { randomInt } from 'node:crypto';
import pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Logger } from 'pino';

/** First key of every lease lock (the second is the lease): keeps these locks apart from others. */
export const LEASE_LOCK_NAMESPACE = 7_240_005;

export const RECOVER_TASK = 'webhook_recover_attempts';
export const RECOVERY_INTERVAL_MS = 60_000;

export type WorkerLease = {
  /** The lease currently held; changes if the lease connection had to be re-established. */
  key(): number;
  release(): Promise<void>;
};

export async function acquireWorkerLease(connectionUri: string, logger: Logger): Promise<WorkerLease> {
  let client: pg.Client | null = null;
  let key = 0;
  let released = false;

  const connect = async () => {
    const next = new pg.Client({ connectionString: connectionUri, application_name: 'webhook-worker-lease' });
    next.on('error', (error) => {
      // The lease is gone with the connection: other processes may now re-run our attempts in
      // flight (a duplicate, which at-least-once allows). Take a new lease for later attempts.
      if (released || client !== next) return;
      client = null;
      logger.warn({ err: error }, 'webhook worker lease connection lost; taking a new lease');
      reacquire();
    });
    try {
      await next.connect();
      for (;;) {
        const candidate = randomInt(1, 2 ** 31 - 1);
        const { rows } = await next.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [LEASE_LOCK_NAMESPACE, candidate]);
        if (rows[0]?.locked) {
          key = candidate;
          break;
        }
      }
    } catch (error) {
      await next.end().catch(() => {});
      throw error;
    }
    if (released) return void (await next.end().catch(() => {}));
    client = next;
  };
  // Through a database outage: tried every second until the database is back.
  const reacquire = (attempt = 0) =>
    setTimeout(() => {
      if (released) return;
      connect().catch((error) => {
        if (attempt === 0) logger.warn({ err: error }, 'webhook worker lease not re-acquired yet; retrying every second');
        reacquire(attempt + 1);
      });
    }, attempt === 0 ? 500 : 1000).unref();
  await connect();

  return {
    key: () => key,
    async release() {
      released = true;
      await client?.end().catch(() => {});
      client = null;
    },
  };
}

/** Re-runs attempts whose worker process died. Returns how many were recovered. */
export async function recoverInterruptedAttempts(pool: DatabasePool): Promise<number> {
  return pool.transaction(async (tx) => {
    const workers = await tx.anyFirst(sql.type(z.object({ attempt_worker: z.string().nullable() }))`
      WITH orphaned AS (
        SELECT d.delivery_id, d.attempt_worker FROM webhook_deliveries d
        WHERE d.attempt_lease IS NOT NULL
          AND NOT EXISTS (
            SELECT 1 FROM pg_locks l
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid = ${LEASE_LOCK_NAMESPACE}::int::oid AND l.objid = d.attempt_lease::oid)
        FOR UPDATE OF d SKIP LOCKED
      )
      UPDATE webhook_deliveries d SET attempt_lease = NULL, attempt_worker = NULL, attempt_started_at = NULL
      FROM orphaned o WHERE d.delivery_id = o.delivery_id
      RETURNING o.attempt_worker`);
    if (workers.length === 0) return 0;
    const ids = [...new Set(workers.filter((worker) => worker !== null))];
    await tx.query(sql.unsafe`SELECT graphile_worker.force_unlock_workers(${sql.array(ids, 'text')})`);
    await tx.query(sql.unsafe`SELECT pg_notify('jobs:insert', ${JSON.stringify({ count: workers.length })})`);
    return workers.length;
  });
}
