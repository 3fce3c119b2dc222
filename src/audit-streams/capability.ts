// Audit log streams: an employer's audit entries, in chain order, to an HTTPS destination (generic
// signed NDJSON, Splunk HEC or Datadog logs), at least once, from a cursor that survives restarts.
import { auditStreamsProjection } from '../../projections/audit-streams/projection.ts';
import type { Capability } from '../capability.ts';
import { createSafeDispatcher } from '../net/safe-target.ts';
import type { Agent } from 'undici';
import { auditStreamAuditMappers } from './audit.ts';
import { auditStreamEvents } from './events.ts';
import { auditStreamRoutes } from './routes.ts';
import { auditStreamKicks, auditStreamTasks, SWEEP_TASK } from './tasks.ts';

export type AuditStreamsCapabilityOptions = {
  /** Extra trusted CA certificate(s) in PEM, for tests whose receiver is self-signed; production: node's roots plus NODE_EXTRA_CA_CERTS. */
  ca?: string | string[];
};

export function createAuditStreamsCapability(options: AuditStreamsCapabilityOptions = {}): Capability<Agent> {
  return {
    name: 'audit-streams',
    events: auditStreamEvents,
    routes: [auditStreamRoutes],
    projections: [auditStreamsProjection, auditStreamKicks],
    auditMappers: auditStreamAuditMappers,
    tasks: (ctx, lease, dispatcher) => auditStreamTasks(ctx, lease, dispatcher),
    crontab: [`* * * * * ${SWEEP_TASK}`],
    // One pooled, address-checking dispatcher per process (the same rules as webhook targets).
    start: async (ctx) => {
      const dispatcher = createSafeDispatcher({
        allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS,
        logger: ctx.logger,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      });
      return { services: dispatcher, stop: () => dispatcher.close() };
    },
  };
}

export const auditStreamsCapability = createAuditStreamsCapability();
