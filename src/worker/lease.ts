// Work a worker process runs survives the process's death. graphile-worker releases the jobs of a dead
// worker only after 4 hours, so a process killed mid-job would leave its work stuck that long. Instead:
// - every worker process holds a lease: a Postgres session advisory lock on its own connection,
//   which the server drops the moment the process dies (its socket closes);
// - a job that must not stay stuck records the lease and the graphile-worker worker id on its row
//   when it starts (webhook attempts, export runs);
// - its capability's recovery task finds rows whose lease is held by no one (leaseAbandoned),
//   clears them and frees their jobs with graphile-worker's force_unlock_workers (meant for exactly
//   this: workers known to be dead), so the same job runs again.
import { randomInt } from 'node:crypto';
import pg from 'pg';
import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import type { Logger } from 'pino';

/** First key of every lease lock (the second is the lease): keeps these locks apart from others. */
const LEASE_LOCK_NAMESPACE = 7_240_005;

export type WorkerLease = {
  /** The lease currently held; changes if the lease connection had to be re-established. */
  key(): number;
  release(): Promise<void>;
};

async function acquireWorkerLease(connectionUri: string, logger: Logger): Promise<WorkerLease> {
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
      logger.warn({ err: error }, 'worker lease connection lost; taking a new lease');
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
        if (attempt === 0) logger.warn({ err: error }, 'worker lease not re-acquired yet; retrying every second');
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

/**
 * The lease of this worker process, taken when first asked for and then held until `release`.
 * Built once per worker process by src/main.ts and handed to the capabilities' tasks.
 */
export type ProcessLease = {
  /** Resolves once the lease is held. */
  held(): Promise<WorkerLease>;
  release(): Promise<void>;
};

export function createProcessLease(connectionUri: string, logger: Logger): ProcessLease {
  let lease: Promise<WorkerLease> | null = null;
  return {
    held: () => (lease ??= acquireWorkerLease(connectionUri, logger)),
    async release() {
      await (await lease?.catch(() => null))?.release();
    },
  };
}

/**
 * SQL: the lease `lease` (a column holding a WorkerLease key) is held by no process any more: the
 * worker that recorded it died, and its job may run again.
 */
export function leaseAbandoned(lease: FragmentSqlToken) {
  return sql.fragment`NOT EXISTS (
    SELECT 1 FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = ${LEASE_LOCK_NAMESPACE}::int::oid AND l.objid = (${lease})::oid)`;
}

/**
 * Frees the jobs locked by dead workers (the worker ids of the `recovered` rows, in the caller's
 * transaction) with force_unlock_workers, and wakes the workers so they run them now.
 */
export async function unlockJobsOfDeadWorkers(tx: CommonQueryMethods, recovered: ReadonlyArray<string | null>): Promise<void> {
  const workerIds = [...new Set(recovered.filter((worker) => worker !== null))];
  await tx.query(sql.unsafe`SELECT graphile_worker.force_unlock_workers(${sql.array(workerIds, 'text')})`);
  await tx.query(sql.unsafe`SELECT pg_notify('jobs:insert', ${JSON.stringify({ count: recovered.length })})`);
}
