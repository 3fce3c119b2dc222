import type { Capability } from '../capability.ts';
import { createSafeDispatcher } from '../net/safe-target.ts';
import { smartClientsProjection } from '../../projections/smart-clients/projection.ts';
import { startSmartTokenService, type SmartTokenService } from './access-tokens.ts';
import { smartClientAuditMappers } from './audit.ts';
import { smartClientEvents } from './events.ts';
import { createKeySetFetcher } from './key-set.ts';
import { smartClientRoutes } from './routes/clients.ts';
import { oauthRoutes } from './routes/oauth.ts';

export type SmartClientServices = { tokens: SmartTokenService; clock: () => number };

/** `clock` (epoch ms) decides assertion and token lifetimes; `ca` (tests only) is trusted for JWKS URLs. */
export function createSmartClientsCapability(options: { clock?: () => number; ca?: string } = {}): Capability<SmartClientServices> {
  const clock = options.clock ?? Date.now;
  return {
    name: 'smart-clients',
    events: smartClientEvents,
    routes: [smartClientRoutes, oauthRoutes],
    projections: [smartClientsProjection],
    auditMappers: smartClientAuditMappers,
    start: async (ctx) => {
      const dispatcher = createSafeDispatcher({
        allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS,
        logger: ctx.logger,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      });
      const tokens = await startSmartTokenService(ctx, createKeySetFetcher(dispatcher, clock), clock);
      return {
        services: { tokens, clock },
        auth: { smartTokens: tokens },
        stop: async () => {
          tokens.stop();
          await dispatcher.close();
        },
      };
    },
  };
}

export const smartClientsCapability = createSmartClientsCapability();
