import { ssoProjection } from '../../projections/sso/projection.ts';
import type { Capability } from '../capability.ts';
import { ssoAuditMappers } from './audit.ts';
import type { TokenBucketLimit } from '../http/token-buckets.ts';
import { ssoConfigurationRoutes } from './routes/configuration.ts';
import { samlRoutes } from './routes/saml.ts';
import { scimTokenRoutes } from './routes/scim-token.ts';
import { ssoTrustChangeRoutes } from './routes/trust-changes.ts';
import { createSamlRuntime, DEFAULT_SAML_CALLBACK_LIMIT, stopSamlRuntime, type SamlRuntime } from './saml-flow.ts';
import type { SamlVerifierOptions } from './saml-verifier.ts';
import { createScimTokenCache, scimTokenLookup } from './scim-token.ts';
import { SSO_CONFIGURATION_EVENT_TYPES, ssoEvents } from './events.ts';
import { REFUSAL_SUMMARIES_TASK, SSO_TRUST_MAIL_TASK, ssoTasks } from './tasks.ts';

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
    routes: [ssoConfigurationRoutes(options), ssoTrustChangeRoutes, samlRoutes, scimTokenRoutes],
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
    tasks: ssoTasks,
    crontab: [`* * * * * ${REFUSAL_SUMMARIES_TASK}`],
    projections: [ssoProjection],
    // Every change of SAML trust is e-mailed to the employer's administrators (the task skips other updates).
    consumers: [{ name: 'sso-trust-mail', eventTypes: SSO_CONFIGURATION_EVENT_TYPES, task: SSO_TRUST_MAIL_TASK }],
    auditMappers: ssoAuditMappers,
  };
}

export const ssoCapability = createSsoCapability();
