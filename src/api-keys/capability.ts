import { apiKeysProjection } from '../../projections/api-keys/projection.ts';
import type { Capability } from '../capability.ts';
import { apiKeyAuditMappers } from './audit.ts';
import { startApiKeyPipeline } from './pipeline.ts';
import type { Clock } from './rate-limiter.ts';
import { apiKeyRoutes } from './routes/key.ts';
import { apiKeyCollectionRoutes } from './routes/keys.ts';
import { apiKeyEvents } from './events.ts';

/** `clock` (epoch ms) decides expiry, rate-limit windows and timestamps; tests pass a controllable one. */
export function createApiKeysCapability(options: { clock?: Clock } = {}): Capability {
  const clock = options.clock ?? Date.now;
  return {
    name: 'api-keys',
    events: apiKeyEvents,
    routes: [apiKeyCollectionRoutes(clock), apiKeyRoutes(clock)],
    projections: [apiKeysProjection],
    auditMappers: apiKeyAuditMappers,
    start: async (ctx) => {
      const pipeline = await startApiKeyPipeline(ctx, clock);
      return { auth: { apiKeys: pipeline }, stop: pipeline.stop };
    },
  };
}

export const apiKeysCapability = createApiKeysCapability();
