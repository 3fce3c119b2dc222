import { ssoProjection } from '../../projections/sso/projection.ts';
import type { Capability } from '../capability.ts';
import { ssoAuditMappers } from './audit.ts';
import type { TokenBucketLimit } from '../http/token-buckets.ts';
import { ssoConfigurationRoutes } from './routes/configuration.ts';
import { ssoMetadataRefreshRoutes } from './routes/metadata-refresh.ts';
import { samlRoutes } from './routes/saml.ts';
import { ssoSpKeyRoutes } from './routes/sp-keys.ts';
import { scimTokenRoutes } from './routes/scim-token.ts';
import { ssoTrustChangeRoutes } from './routes/trust-changes.ts';
import { createSamlRuntime, DEFAULT_SAML_CALLBACK_LIMIT, stopSamlRuntime, type SamlRuntime } from './saml-flow.ts';
import type { SamlVerifierOptions } from './saml-verifier.ts';
import { createScimTokenCache, scimTokenLookup } from './scim-token.ts';
import { SSO_CONFIGURATION_EVENT_TYPES, ssoEvents } from './events.ts';
import { metadataFetchOptionsOf } from './idp-metadata.ts';
import { CERTIFICATE_EXPIRY_TASK, METADATA_REFRESH_TASK, REFUSAL_SUMMARIES_TASK, SSO_TRUST_MAIL_TASK, ssoTasks } from './tasks.ts';

export type SsoCapabilityOptions = {
  /** Tests only: a CA to trust when fetching IdP metadata (a local HTTPS server with a self-signed certificate). */
  idpMetadataCa?: string;
  /** SAML callbacks allowed per client address, a login that succeeds not counting (default DEFAULT_SAML_CALLBACK_LIMIT). */
  callbackLimit?: TokenBucketLimit;
  /** Tests only: the SAML verifier's worker module. */
  samlVerifier?: Omit<SamlVerifierOptions, 'threads'>;
};

export function createSsoCapability(options: SsoCapabilityOptions = {}): Capability<SamlRuntime> {
  return {
    name: 'sso',
    events: ssoEvents,
    routes: [ssoConfigurationRoutes(options), ssoTrustChangeRoutes, ssoMetadataRefreshRoutes(options), ssoSpKeyRoutes, samlRoutes, scimTokenRoutes],
    // SCIM tokens are this capability's: the SCIM routes ask for them through core's port.
    start: async (ctx) => {
      const scimTokens = await createScimTokenCache(ctx);
      const saml = createSamlRuntime(ctx, { callbackLimit: options.callbackLimit ?? DEFAULT_SAML_CALLBACK_LIMIT, ...(options.samlVerifier ? { verifier: options.samlVerifier } : {}) });
      return {
        auth: { scimTokens: scimTokenLookup(scimTokens) },
        services: saml,
        stop: async () => {
          scimTokens.stop();
          await stopSamlRuntime(saml);
        },
      };
    },
    tasks: (ctx) => ssoTasks(ctx, metadataFetchOptionsOf(ctx.config, options.idpMetadataCa)),
    // The expiry check runs after the day's refresh, so a certificate rolled at the IdP is not warned of.
    crontab: [`* * * * * ${REFUSAL_SUMMARIES_TASK}`, `0 3 * * * ${METADATA_REFRESH_TASK}`, `30 3 * * * ${CERTIFICATE_EXPIRY_TASK}`],
    projections: [ssoProjection],
    // Every change of SAML trust is e-mailed to the employer's administrators (the task skips other updates).
    consumers: [{ name: 'sso-trust-mail', eventTypes: SSO_CONFIGURATION_EVENT_TYPES, task: SSO_TRUST_MAIL_TASK }],
    auditMappers: ssoAuditMappers,
  };
}

export const ssoCapability = createSsoCapability();
