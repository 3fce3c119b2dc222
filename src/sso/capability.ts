import { ssoProjection } from '../../projections/sso/projection.ts';
import type { Capability } from '../capability.ts';
import type { TokenBucketLimit } from '../http/token-buckets.ts';
import { ssoRoutes } from './routes.ts';
import { createScimTokenCache } from './scim-token.ts';
import { ssoEvents } from './events.ts';

export type SsoCapabilityOptions = {
  /** Tests only: a CA to trust when fetching IdP metadata (a local HTTPS server with a self-signed certificate). */
  idpMetadataCa?: string;
  /** Refused SAML callbacks allowed per client address (default DEFAULT_SAML_CALLBACK_FAILURE_LIMIT). */
  callbackFailureLimit?: TokenBucketLimit;
};

export function createSsoCapability(options: SsoCapabilityOptions = {}): Capability {
  return {
    name: 'sso',
    events: ssoEvents,
    routes: [ssoRoutes(options)],
    setup: async (ctx) => {
      const scimTokens = await createScimTokenCache(ctx);
      ctx.scimTokens = scimTokens;
      ctx.shutdownHooks.push(async () => scimTokens.stop());
    },
    projections: [ssoProjection],
    auditMappers: {
      // Field names only: certificates and URLs stay in the event, token hashes never reach the audit log.
      SsoConfigurationUpdated: (event) => ({
        action: 'sso.config.update',
        targetType: 'employer',
        targetId: String(event.data.employerId),
        details: {
          fields: Object.keys(event.data.changes as object).sort(),
          scimTokenIssued: event.data.issuedScimToken !== null,
          scimTokenRevoked: event.data.revokedScimTokenId !== null,
        },
      }),
      SamlLoginSucceeded: (event) => ({
        action: 'auth.saml.login',
        targetType: 'user',
        targetId: String(event.data.userId),
        details: { assertionId: event.data.assertionId, provisioned: event.data.provisioned },
      }),
      SamlLoginFailed: (event) => ({
        action: 'auth.saml.login_failed',
        targetType: 'saml_login',
        targetId: String(event.data.loginId),
        details: { reason: event.data.reason, clientIp: event.data.clientIp },
      }),
    },
  };
}

export const ssoCapability = createSsoCapability();
