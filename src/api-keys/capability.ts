import { apiKeysProjection } from '../../projections/api-keys/projection.ts';
import type { Capability } from '../capability.ts';
import { startApiKeyPipeline } from './pipeline.ts';
import type { Clock } from './rate-limiter.ts';
import { apiKeyRoutes } from './routes.ts';
import { apiKeyEvents } from './events.ts';

const keyTarget = (event: { data: Record<string, unknown> }) => ({ targetType: 'api_key', targetId: String(event.data.keyId) });

/** `clock` (epoch ms) decides expiry, rate-limit windows and timestamps; tests pass a controllable one. */
export function createApiKeysCapability(options: { clock?: Clock } = {}): Capability {
  const clock = options.clock ?? Date.now;
  return {
    name: 'api-keys',
    events: apiKeyEvents,
    routes: [apiKeyRoutes(clock)],
    projections: [apiKeysProjection],
    auditMappers: {
      ApiKeyCreated: (event) => ({
        action: 'api_key.created',
        ...keyTarget(event),
        details: { name: event.data.name, scopes: event.data.scopes, allowedIpCidrs: event.data.allowedIpCidrs, expiresAt: event.data.expiresAt },
      }),
      ApiKeyRenamed: (event) => ({ action: 'api_key.renamed', ...keyTarget(event), details: { name: event.data.name } }),
      ApiKeySuspended: (event) => ({ action: 'api_key.suspended', ...keyTarget(event) }),
      ApiKeyResumed: (event) => ({ action: 'api_key.resumed', ...keyTarget(event) }),
      ApiKeyRevoked: (event) => ({ action: 'api_key.revoked', ...keyTarget(event), details: { reason: event.data.reason } }),
    },
    start: async (ctx) => {
      const pipeline = await startApiKeyPipeline(ctx, clock);
      return { auth: { apiKeys: pipeline }, stop: pipeline.stop };
    },
  };
}

export const apiKeysCapability = createApiKeysCapability();
