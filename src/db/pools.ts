// Clients of one database: slonik (typed SQL in tagged templates) for read models and queries; a pg
// pool for the event store (its hot path, and independent of read-model transactions: a rebuild reads
// events while it holds its swap transaction open); a general pg pool; and, in worker processes, a pg
// pool for graphile-worker.
//
// Every connection a process opens comes out of one budget (DATABASE_MAX_CONNECTIONS), split by the
// roles it runs (planConnections), so N processes fit a server's max_connections. Waiting for a
// connection is bounded (DATABASE_CONNECTION_WAIT_MS), and every statement is
// (DATABASE_STATEMENT_TIMEOUT_MS): a saturated or unreachable database becomes DatabaseUnavailableError
// (503 with Retry-After), never a request that hangs.
import pg from 'pg';
import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  createPool,
  createTypeParserPreset,
  IdleTransactionTimeoutError,
  StatementTimeoutError,
  type DatabasePool,
} from 'slonik';
import { ConfigError } from '../config.ts';
import { LATENCY_BUCKETS_SECONDS, type Metrics } from '../metrics/registry.ts';

export type Database = {
  slonik: DatabasePool;
  eventStore: pg.Pool;
  pg: pg.Pool;
  /** graphile-worker's pool; null in a process without the worker role. */
  worker: pg.Pool | null;
  connectionUri: string;
  plan: ConnectionPlan;
};

/** A stuck writer holding a transaction open would stall every event reader (they read below xmin). */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;

/** How the budget of one process is split. `total` never exceeds the budget. */
export type ConnectionPlan = {
  readModels: number;
  eventStore: number;
  pg: number;
  /** The shared LISTEN connection (src/db/notifications.ts). */
  listener: number;
  /** graphile-worker: its LISTEN connection, job fetches and completions (tasks use the read-model pool). */
  worker: number;
  /** The worker lease (src/worker/lease.ts). */
  workerLease: number;
  total: number;
};

const WORKER_POOL_SIZE = 4;
const WORKER_CONNECTION_WAIT_MS = 30_000;

/**
 * Splits a process's connection budget: one LISTEN connection; in worker processes graphile-worker's
 * pool and the lease; the rest shared by weight, read models 3, general pg pool 3, event store 2 (reads
 * dominate every role: the API's queries, the projections' transactions, the worker's delivery rows;
 * the pg pool carries the hot reads, named statements such as the webhook list and session lookups).
 */
export function planConnections(budget: number, roles: { worker: boolean }): ConnectionPlan {
  const listener = 1;
  const worker = roles.worker ? WORKER_POOL_SIZE : 0;
  const workerLease = roles.worker ? 1 : 0;
  const shared = budget - listener - worker - workerLease;
  const minimum = listener + worker + workerLease + 4;
  if (shared < 4) throw new ConfigError(`Invalid configuration:\n  DATABASE_MAX_CONNECTIONS: ${budget} is too small for these roles; at least ${minimum}`);
  const eventStore = Math.max(1, Math.floor((shared * 2) / 8));
  const pgPool = Math.max(1, Math.floor((shared * 3) / 8));
  const readModels = shared - eventStore - pgPool;
  return { readModels, eventStore, pg: pgPool, listener, worker, workerLease, total: budget };
}

export function describePlan(plan: ConnectionPlan): string {
  const parts = [`read models ${plan.readModels}`, `event store ${plan.eventStore}`, `pg ${plan.pg}`, `listener ${plan.listener}`];
  if (plan.worker) parts.push(`worker ${plan.worker}`, `worker lease ${plan.workerLease}`);
  return `${plan.total} database connections (${parts.join(', ')})`;
}

export type PoolOptions = {
  plan?: ConnectionPlan;
  /** How long a query waits for a free connection (and for a new one to connect) before failing. */
  connectionWaitMs?: number;
  /** Server-side statement_timeout of every pooled connection; 0 for none (operator commands such as a rebuild). */
  statementTimeoutMs?: number;
  /** Where the pools' sizes, use and waits for a connection are reported (db_pool_*). */
  metrics?: Metrics;
};

/** Records one wait for a connection, in seconds. */
type WaitObserver = (seconds: number) => void;

export async function openDatabase(connectionUri: string, options: PoolOptions = {}): Promise<Database> {
  const plan = options.plan ?? planConnections(20, { worker: true });
  const waitMs = options.connectionWaitMs ?? 3000;
  const statementTimeoutMs = options.statementTimeoutMs ?? 30_000;
  const slonik = await createPool(withApplicationName(connectionUri, 'read-models'), {
    captureStackTrace: false,
    // slonik's default runs DISCARD ALL after every pooled query (a second round trip each, and no
    // cached plans). Nothing here leaves session state behind: settings are transaction-local.
    resetConnection: async () => {},
    // Connections stay open once made: the budget is reserved for the process anyway, and a pool that
    // closes an idle one opens its replacement while the old backend is still exiting (one over budget).
    idleTimeout: 'DISABLE_TIMEOUT',
    idleInTransactionSessionTimeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    statementTimeout: statementTimeoutMs === 0 ? 'DISABLE_TIMEOUT' : statementTimeoutMs,
    maximumPoolSize: plan.readModels,
    connectionTimeout: waitMs,
    // An unreachable database fails the request at once (503); retrying is the client's call.
    connectionRetryLimit: 0,
    typeParsers: [
      ...createTypeParserPreset().filter((parser) => parser.name !== 'timestamptz'),
      // Timestamps leave the database as ISO 8601 strings, the form every API response uses.
      { name: 'timestamptz', parse: (value: string) => new Date(value).toISOString() },
    ],
  });
  const waits = poolWaitObservers(options.metrics);
  const pgSettings = { waitMs, statementTimeoutMs };
  // The event store's statements are few, named and prepared once per connection, and their best plan
  // does not depend on the values. Left to choose (Postgres's default), it re-planned the append to
  // several streams for every call, which then spent more time planning than running (measured:
  // 0.65 ms a call against 0.35 ms with the generic plan).
  const eventStore = newPgPool(connectionUri, 'event-store', plan.eventStore, { ...pgSettings, options: '-c plan_cache_mode=force_generic_plan' }, waits('event-store'));
  const pgPool = newPgPool(connectionUri, 'pg', plan.pg, pgSettings, waits('pg'));
  // No request waits on graphile-worker's pool, and a start-up that gives up on a connection leaves its
  // runner fetching nothing until replaced (src/worker/runner.ts): its jobs wait longer for one.
  const worker = plan.worker ? newPgPool(connectionUri, 'worker', plan.worker, { ...pgSettings, waitMs: Math.max(waitMs, WORKER_CONNECTION_WAIT_MS) }, waits('worker')) : null;
  const permits = { free: plan.readModels, waiting: [] as Array<() => void> };
  if (options.metrics) reportPools(options.metrics, { slonik, permits, size: plan.readModels }, { 'event-store': eventStore, pg: pgPool, ...(worker ? { worker } : {}) });
  return { slonik: boundedWait(slonik, permits, waitMs, waits('read-models')), eventStore, pg: pgPool, worker, connectionUri, plan };
}

/** Per pool: how long callers waited for a connection (none when no metrics are kept). */
function poolWaitObservers(metrics: Metrics | undefined): (pool: string) => WaitObserver | undefined {
  if (!metrics) return () => undefined;
  const waits = metrics.histogram({
    name: 'db_pool_wait_seconds',
    help: 'Time a query waited for a connection of its pool (0 when one was free), by pool.',
    labelNames: ['pool'],
    buckets: [0, ...LATENCY_BUCKETS_SECONDS],
  });
  return (pool) => {
    const series = waits.labels({ pool });
    return (seconds) => series.observe(seconds);
  };
}

/** The pools' sizes and use, read from the pools themselves at each scrape. */
function reportPools(metrics: Metrics, readModels: { slonik: DatabasePool; permits: Permits; size: number }, pgPools: Record<string, pg.Pool>) {
  const pool = ['pool'];
  metrics.collectedGauges(
    'db_pools',
    {
      max: { name: 'db_pool_max_connections', help: 'Connections a pool may open (its share of DATABASE_MAX_CONNECTIONS), by pool.', labelNames: pool },
      open: { name: 'db_pool_connections', help: 'Connections a pool holds open, by pool.', labelNames: pool },
      inUse: { name: 'db_pool_connections_in_use', help: 'Connections of a pool lent to a query or transaction, by pool.', labelNames: pool },
      waiting: { name: 'db_pool_waiting_clients', help: 'Callers waiting for a connection of a pool, by pool.', labelNames: pool },
    },
    async ({ max, open, inUse, waiting }) => {
      const state = readModels.slonik.state();
      const readModelsPool = { pool: 'read-models' };
      max.set(readModelsPool, readModels.size);
      open.set(readModelsPool, state.acquiredConnections + state.idleConnections);
      inUse.set(readModelsPool, readModels.size - readModels.permits.free);
      waiting.set(readModelsPool, readModels.permits.waiting.length);
      for (const [name, pgPool] of Object.entries(pgPools)) {
        const labels = { pool: name };
        max.set(labels, pgPool.options.max);
        open.set(labels, pgPool.totalCount);
        inUse.set(labels, pgPool.totalCount - pgPool.idleCount);
        waiting.set(labels, pgPool.waitingCount);
      }
    },
  );
}

export async function closeDatabase(db: Database): Promise<void> {
  await Promise.allSettled([db.slonik.end(), db.eventStore.end(), db.pg.end(), db.worker?.end()]);
}

/** The application name every connection of a pool carries, so pg_stat_activity tells them apart. */
export function applicationName(pool: string): string {
  return `employer-integrations ${pool}`;
}

function withApplicationName(connectionUri: string, pool: string): string {
  const url = new URL(connectionUri);
  url.searchParams.set('application_name', applicationName(pool));
  return url.toString();
}

function newPgPool(connectionUri: string, name: string, max: number, settings: { waitMs: number; statementTimeoutMs: number; options?: string }, observeWait?: WaitObserver): pg.Pool {
  const pool = new pg.Pool({
    connectionString: connectionUri,
    application_name: applicationName(name),
    max,
    idleTimeoutMillis: 0, // kept open, as the read-model pool's (above)
    // pg-pool applies this to the wait for a free client as well as to connecting a new one.
    connectionTimeoutMillis: settings.waitMs,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
    ...(settings.statementTimeoutMs > 0 ? { statement_timeout: settings.statementTimeoutMs } : {}),
    ...(settings.options ? { options: settings.options } : {}),
  });
  // Idle clients dropped by the server are replaced on next use; graphile-worker asks for both handlers.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  if (observeWait) timingWaits(pool, observeWait);
  return keepingConnectionsOnRefusals(pool);
}

/** Times every promise-style `connect` (how queries, transactions and graphile-worker take a connection). */
function timingWaits(pool: pg.Pool, observeWait: WaitObserver) {
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => {
    if (args.length > 0) return connect(...args); // the callback form, untouched
    const started = performance.now();
    return (connect() as Promise<pg.PoolClient>).finally(() => observeWait((performance.now() - started) / 1000));
  }) as typeof pool.connect;
}

/**
 * pg-pool's `query` closes its connection after any failed statement, even one the server refused
 * (a unique violation, a conflicting append, a statement timeout) on a connection that stays usable:
 * that costs a reconnect and the connection's prepared statements, and its backend outlives it for a
 * moment, so its replacement would take the process one over its budget. A refusal by the server
 * (pg.DatabaseError) keeps the connection; anything else (a broken connection) still closes it.
 */
function keepingConnectionsOnRefusals(pool: pg.Pool): pg.Pool {
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = (async (...args: unknown[]) => {
    if (typeof args[args.length - 1] === 'function') return query(...args); // the callback form, untouched
    const client = await pool.connect();
    let failure: Error | undefined;
    try {
      return await (client.query as (...queryArgs: unknown[]) => Promise<unknown>)(...args);
    } catch (error) {
      if (!(error instanceof pg.DatabaseError)) failure = error as Error;
      throw error;
    } finally {
      client.release(failure);
    }
  }) as typeof pool.query;
  return pool;
}

/** The database is unreachable, or no connection freed up in time: the client should retry later. */
export class DatabaseUnavailableError extends Error {}

// slonik's pool queues callers for a connection without a time limit. Permits, as many as its
// connections and each waited for at most `waitMs`, keep it from ever queueing.
const POOL_METHODS = new Set(['any', 'anyFirst', 'exists', 'many', 'manyFirst', 'maybeOne', 'maybeOneFirst', 'one', 'oneFirst', 'query', 'stream', 'transaction', 'connect']);

type Permits = { free: number; waiting: Array<() => void> };

function boundedWait(pool: DatabasePool, permits: Permits, waitMs: number, observeWait?: WaitObserver): DatabasePool {
  const { waiting } = permits;
  const acquire = () => {
    if (permits.free > 0) {
      permits.free--;
      observeWait?.(0);
      return Promise.resolve();
    }
    const started = performance.now();
    return new Promise<void>((granted, refused) => {
      const grant = () => {
        clearTimeout(timer);
        observeWait?.((performance.now() - started) / 1000);
        granted();
      };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(grant), 1);
        observeWait?.((performance.now() - started) / 1000);
        refused(new DatabaseUnavailableError(`No database connection became free within ${waitMs} ms.`));
      }, waitMs);
      waiting.push(grant);
    });
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else permits.free++;
  };
  return new Proxy(pool, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof property !== 'string' || !POOL_METHODS.has(property) || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await acquire();
        try {
          return await (value as (...args: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          release();
        }
      };
    },
  });
}

const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25P03']);
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGES = ['timeout exceeded when trying to connect', 'connection terminated', 'is not queryable', 'connection timeout'];

/**
 * Whether an error means "the database cannot serve this now" (unreachable, restarting, out of
 * connections, or too slow: a statement timeout) rather than a fault of the request or of our code.
 * Looks through slonik's wrappers (`cause`) and the AggregateError of a refused dual-stack connect.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 5) return false;
  if (
    error instanceof DatabaseUnavailableError ||
    error instanceof ConnectionError ||
    error instanceof BackendTerminatedError ||
    error instanceof BackendTerminatedUnexpectedlyError ||
    error instanceof StatementTimeoutError ||
    error instanceof IdleTransactionTimeoutError
  ) {
    return true;
  }
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08') || UNAVAILABLE_NODE_CODES.has(code))) return true;
  const message = error.message.toLowerCase();
  if (UNAVAILABLE_MESSAGES.some((text) => message.includes(text))) return true;
  if (error instanceof AggregateError && error.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(error.cause, depth + 1);
}
