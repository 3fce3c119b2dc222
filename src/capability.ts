// What a capability (api-keys, webhooks, sso, scim, ...) contributes to the running service. The list
// of capabilities lives in src/capabilities.ts; src/main.ts wires each part into its runner.
import type { KeyObject } from 'node:crypto';
import type { TaskList } from 'graphile-worker';
import type { Projection } from './event-store/projection.ts';
import type { AppContext } from './app-context.ts';
import type { AuditMappers } from '../projections/audit/audit-entry.ts';
import type { EventSchema } from './event-store/schemas.ts';
import type { RoutePlugin } from './http/server.ts';
import type { EventConsumer } from './worker/dispatcher.ts';

export type Capability = {
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
  tasks?: (ctx: AppContext) => TaskList;
  /** graphile-worker crontab lines (`<minute> <hour> <day> <month> <weekday> <task>`), run by every worker process, once per slot. */
  crontab?: string[];
  /** Called once per process before anything runs (install authenticators, start caches, ...). */
  setup?: (ctx: AppContext) => Promise<void>;
};
