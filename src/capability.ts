// What a capability (api-keys, webhooks, sso, scim, ...) contributes to the running service. The list
// of capabilities lives in src/capabilities.ts; src/main.ts wires each part into its runner.
import type { KeyObject } from 'node:crypto';
import type { TaskList } from 'graphile-worker';
import type { AppContext, StartContext } from './app-context.ts';
import type { AuthPorts } from './auth/ports.ts';
import type { RecordedEvent } from './event-store/port.ts';
import type { Projection } from './event-store/projection.ts';
import type { EventSchema } from './event-store/schemas.ts';
import type { RoutePlugin } from './http/server.ts';
import type { EventConsumer } from './worker/dispatcher.ts';
import type { ProcessLease } from './worker/lease.ts';

// Audit records are derived from events: each capability says which of its events are auditable and
// how they read (action names of SPEC section 5.5); the audit projection writes them to audit_log.
export type AuditEntry = { action: string; targetType: string; targetId: string; details?: Record<string, unknown> };

/** event type -> audit entry (or null when this occurrence is not auditable). */
export type AuditMappers = Record<string, (event: RecordedEvent) => AuditEntry | null>;

/** The audit target an event names in its data field `idField`, as a `targetType` of `type`. */
export const auditTarget = (type: string, idField: string) => (event: { data: Record<string, unknown> }) => ({ targetType: type, targetId: String(event.data[idField]) });

/**
 * What a capability started in one process: what it created there (`services`, which src/main.ts
 * hands to its routes and tasks), the ports of core's authentication it implements, and how to stop.
 */
export type Started<Services = unknown> = {
  services?: Services;
  auth?: Partial<AuthPorts>;
  /** Runs on shutdown, after the HTTP server, the worker and the projections have stopped. */
  stop?: () => Promise<void>;
};

/**
 * Routes that use what their capability's start created (its Started.services, which must be
 * `Services`). Their handlers only reach it: the console's build declares routes without starting.
 */
export function routesUsing<Services>(plugin: RoutePlugin<Services>): RoutePlugin {
  return plugin as RoutePlugin;
}

export type Capability<Services = unknown> = {
  name: string;
  /** Schemas of the events this capability's deciders write (src/<capability>/events.ts). */
  events?: readonly EventSchema[];
  routes?: RoutePlugin[];
  projections?: Projection[];
  /** Projections that open personal data sealed under data keys (src/crypto/personal-data.ts) need ENCRYPTION_KEY. */
  keyedProjections?: (encryptionKey: KeyObject) => Projection[];
  auditMappers?: AuditMappers;
  /** Events this capability handles in the worker, each through one of its tasks. */
  consumers?: EventConsumer[];
  /**
   * Its graphile-worker tasks, built once per worker process: `lease` is that process's
   * (src/worker/lease.ts), `services` what the capability's start created there.
   */
  tasks?(ctx: AppContext, lease: ProcessLease, services: Services): TaskList;
  /** graphile-worker crontab lines (`<minute> <hour> <day> <month> <weekday> <task>`), run by every worker process, once per slot. */
  crontab?: string[];
  /**
   * For a capability that holds something per process (a cache, an HTTP pool, worker threads) or
   * implements a port of core: called once per process before anything runs, to create it. What it
   * creates reaches its routes and tasks as arguments, never through the context.
   */
  start?: (ctx: StartContext) => Promise<Started<Services>>;
};
