// Starts the service: database (embedded Postgres when DATABASE_URL is unset), migrations, event
// store, and then the roles asked for: HTTP API, projection runner (with the job dispatcher), worker.
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { KeyObject } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import { auditProjection } from '../projections/audit/projection.ts';
import { auditChainProjection } from '../projections/audit-chain/projection.ts';
import { handlesEventType, type Projection } from './event-store/projection.ts';
import { createProjectionWaiter, startProjectionRunner, type ProjectionRunner } from '../projections/runner.ts';
import { reportProjections } from '../projections/metrics.ts';
import { projectionReadiness } from '../projections/status.ts';
import type { AppContext, StartContext } from './app-context.ts';
import { NO_CREDENTIALS, type AuthPorts } from './auth/ports.ts';
import { API_TAGS, capabilities as defaultCapabilities } from './capabilities.ts';
import type { Capability, Started } from './capability.ts';
import type { Config } from './config.ts';
import { resolveEncryptionKey } from './crypto/encryption-key.ts';
import { resolveAuditSigner, type AuditSigner } from './crypto/signing-key.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded-postgres.ts';
import { migrate } from './db/migrate.ts';
import { createNotifications } from './db/notifications.ts';
import { closeDatabase, openDatabase, planConnections } from './db/pools.ts';
import { createEventStore } from './event-store/create.ts';
import { withAppendMetrics } from './event-store/metrics.ts';
import { createEventRegistry, type EventRegistry } from './event-store/schemas.ts';
import { buildServer } from './http/server.ts';
import { createLogger } from './logger.ts';
import { createMetrics } from './metrics/registry.ts';
import { metricsServed, startMetricsListener, type MetricsListener } from './metrics/scrape.ts';
import { sealPrototypes } from './http/prototypes.ts';
import { createMailer } from './net/mailer.ts';
import { jobDispatcherProjection } from './worker/dispatcher.ts';
import { createProcessLease } from './worker/lease.ts';
import { jobOutcomes, reportQueueDepth } from './worker/metrics.ts';
import { startWorker, type WorkerRunner } from './worker/runner.ts';
import { startTracing } from './tracing.ts';

export type Role = 'api' | 'worker' | 'projections';
export const ALL_ROLES: Role[] = ['api', 'worker', 'projections'];

export type Service = {
  ctx: AppContext;
  url: string | null;
  /** The METRICS_PORT listener's base URL; null without METRICS_PORT. */
  metricsUrl: string | null;
  server: FastifyInstance | null;
  projections: Projection[];
  /** What the capability of this name created in this process (its Started.services), for tests and tools. */
  servicesOf<Services>(capability: Capability<Services>): Services;
  stop(): Promise<void>;
};

/** Every projection of the service: each capability's read models, the audit log and chain, the job dispatcher. */
export function allProjections(capabilities: Capability[], options: { encryptionKey: KeyObject; audit: { signer: AuditSigner; checkpointEveryEvents: number } }): Projection[] {
  const { encryptionKey, audit } = options;
  const auditMappers = Object.assign({}, ...capabilities.map((capability) => capability.auditMappers ?? {}));
  return [
    ...capabilities.flatMap((capability) => [...(capability.projections ?? []), ...(capability.keyedProjections?.(encryptionKey) ?? [])]),
    auditProjection(auditMappers),
    auditChainProjection(audit),
    jobDispatcherProjection(capabilities.flatMap((capability) => capability.consumers ?? [])),
  ];
}

/** The schemas of every capability's events: what the event store validates and parses. */
export function eventRegistryOf(capabilities: Capability[]): EventRegistry {
  return createEventRegistry(capabilities.flatMap((capability) => capability.events ?? []));
}

/** Connects to the configured database (starting the embedded one if needed) and migrates it. */
export async function connectDatabase(config: Config, logger?: Logger) {
  let embedded: EmbeddedDatabase | null = null;
  let connectionUri = config.DATABASE_URL;
  if (!connectionUri) {
    // A CLI command next to a running `npm start` shares that process's embedded server.
    embedded = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, port: config.EMBEDDED_POSTGRES_PORT, ...(logger ? { logger } : {}) });
    connectionUri = embedded.connectionUri;
  }
  await migrate(connectionUri);
  return { connectionUri, embedded };
}

export async function startService(options: {
  config: Config;
  roles?: Role[];
  capabilities?: Capability[];
  logDestination?: DestinationStream;
  /** Extra projections (tests use this to add consumers). */
  extraProjections?: Projection[];
}): Promise<Service> {
  // Before any request or event is read (src/http/prototypes.ts says why sealed, and not frozen).
  sealPrototypes();
  const { config } = options;
  const roles = options.roles ?? ALL_ROLES;
  const capabilities = options.capabilities ?? defaultCapabilities;
  const logger = createLogger(config.LOG_LEVEL, options.logDestination);
  // Before anything that makes spans; null when OTEL_EXPORTER_OTLP_ENDPOINT is unset.
  const tracing = await startTracing(config, logger);
  const plan = planConnections(config.DATABASE_MAX_CONNECTIONS, { worker: roles.includes('worker') });
  const metrics = createMetrics({ defaults: metricsServed(config) });
  const { connectionUri, embedded } = await connectDatabase(config, logger);
  const db = await openDatabase(connectionUri, { plan, connectionWaitMs: config.DATABASE_CONNECTION_WAIT_MS, statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS, metrics });
  const notifications = createNotifications(connectionUri);
  // Other processes hear of this one before its first append (see peersListening).
  await notifications.ready();
  const encryptionKey = await resolveEncryptionKey(config);
  const auditSigner = await resolveAuditSigner(config);
  const projections = [
    ...allProjections(capabilities, { encryptionKey, audit: { signer: auditSigner, checkpointEveryEvents: config.AUDIT_CHECKPOINT_EVERY_EVENTS } }),
    ...(options.extraProjections ?? []),
  ];
  const eventStore = withAppendMetrics(await createEventStore(config, db, notifications, eventRegistryOf(capabilities), projections), metrics);

  // Read models the store applies in the appending transaction are current when an append returns.
  const awaitedProjections = projections.filter((projection) => projection.awaitedByCommands && !eventStore.inlineProjections.includes(projection.name));
  const waitForProjections = createProjectionWaiter({
    pool: db.slonik,
    notifications,
    names: awaitedProjections.map((projection) => projection.name),
    timeoutMs: config.PROJECTION_WAIT_TIMEOUT_MS,
  });
  // Only the read models that handle a command's events are waited for: an e-mail reservation, which
  // no read model shows, costs no wait at all.
  const projectionsHandling = (eventTypes: readonly string[]) =>
    awaitedProjections.filter((projection) => eventTypes.some((type) => handlesEventType(projection, type))).map((projection) => projection.name);
  const base: StartContext = {
    config,
    db,
    eventStore,
    notifications,
    logger,
    metrics,
    commands: {
      eventStore,
      waitForProjections: async (position, eventTypes) => {
        // When no projection runs in this process or elsewhere, the bounded wait simply times out.
        const caughtUp = await waitForProjections(position, projectionsHandling(eventTypes));
        if (!caughtUp) logger.warn({ position: `${position.commit}/${position.prepare}` }, 'read models lag behind a command');
        return caughtUp;
      },
      personalData: { db: db.slonik, encryptionKey },
    },
    waitForReadModels: waitForProjections,
    openapi: new OpenAPIRegistry(),
    encryptionKey,
    mailer: createMailer(config, logger),
    auditSigner,
  };
  const started = new Map<Capability, Started>();
  for (const capability of capabilities) if (capability.start) started.set(capability, await capability.start(base));
  const ctx: AppContext = { ...base, auth: authPortsOf([...started.values()]) };

  let projectionRunner: ProjectionRunner | null = null;
  if (roles.includes('projections')) {
    projectionRunner = await startProjectionRunner({
      pool: db.slonik,
      // Half the read-model connections at most: the rest stay for queries and commands.
      maxConcurrentBatches: Math.max(1, Math.floor(db.plan.readModels / 2)),
      eventStore,
      notifications,
      projections,
      onError: (name, error) => logger.error({ err: error, projection: name }, 'projection batch failed; retrying'),
      onParked: (name, { event, error, behind }) =>
        logger[behind ? 'warn' : 'error'](
          { projection: name, eventId: event.eventId, eventType: event.type, tenantId: event.metadata.tenantId, error },
          'projection parked an event; see npm run cli -- projections status',
        ),
    });
    reportProjections(metrics, { pool: db.slonik, eventStore, projections });
  }

  // A worker process holds one lease, which the tasks of every capability share (src/worker/lease.ts).
  const lease = roles.includes('worker') ? createProcessLease(db.connectionUri, logger) : null;
  let worker: WorkerRunner | null = null;
  if (lease) {
    const tasks = Object.assign({}, ...capabilities.map((capability) => capability.tasks?.(ctx, lease, started.get(capability)?.services) ?? {}));
    const crontab = capabilities.flatMap((capability) => capability.crontab ?? []).join('\n');
    worker = await startWorker({
      pgPool: db.worker!, tasks, crontab, reserveConcurrency: config.WORKER_RESERVE_CONCURRENCY, jobsPerEmployer: config.WORKER_JOBS_PER_EMPLOYER,
      onRestart: (reason) => logger.warn({ err: reason }, 'worker pool stopped by itself or fetched no job; starting a new one'),
      onError: (message) => logger.error({ component: 'graphile-worker' }, message),
      observe: jobOutcomes(metrics),
    });
    reportQueueDepth(metrics, db.slonik);
  }

  let server: FastifyInstance | null = null;
  let url: string | null = null;
  if (roles.includes('api')) {
    server = await buildServer(
      ctx,
      capabilities.flatMap((capability) => (capability.routes ?? []).map((plugin) => ({ plugin, services: started.get(capability)?.services }))),
      { projections: () => projectionReadiness({ pool: db.slonik, eventStore, projections }) },
      API_TAGS,
    );
    url = await server.listen({ port: config.PORT, host: config.HOST });
  }
  const metricsListener: MetricsListener | null =
    config.METRICS_PORT === undefined ? null : await startMetricsListener({ metrics, secret: config.METRICS_SECRET, host: config.HOST, port: config.METRICS_PORT });

  let stopping: Promise<void> | null = null;
  return {
    ctx,
    url,
    metricsUrl: metricsListener?.url ?? null,
    server,
    projections,
    servicesOf<Services>(capability: Capability<Services>): Services {
      const services = [...started].find(([running]) => running.name === capability.name)?.[1].services;
      if (services === undefined) throw new Error(`capability ${capability.name} started nothing in this service`);
      return services as Services;
    },
    stop: () =>
      (stopping ??= (async () => {
        await metricsListener?.close();
        await server?.close(); // in-flight requests finish first
        await worker?.stop(); // running jobs finish first
        await projectionRunner?.stop();
        // Then what capabilities hold open (telemetry flushes, HTTP pools, caches), with the database still up.
        for (const [capability, parts] of started) await parts.stop?.().catch((error) => logger.error({ err: error, capability: capability.name }, 'stopping a capability failed'));
        await lease?.release();
        base.mailer.close();
        await eventStore.close();
        await notifications.close();
        await closeDatabase(db);
        await embedded?.stop();
        await tracing?.stop(); // exports the last spans
      })()),
  };
}

/** Core's authentication ports as the started capabilities implement them; NO_CREDENTIALS for the others. */
function authPortsOf(started: Started[]): AuthPorts {
  return Object.assign({ ...NO_CREDENTIALS }, ...started.map((parts) => parts.auth ?? {}));
}
