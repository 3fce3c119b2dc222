import { ssoProjection } from '../../projections/sso/projection.ts';
import type { Capability } from '../capability.ts';
import type { TokenBucketLimit } from '../http/token-buckets.ts';
import { ssoRoutes } from './routes.ts';
import { DEFAULT_SAML_CALLBACK_LIMIT, installSamlRuntime } from './saml-flow.ts';
import { summariseSamlRefusals } from './saml-refusals.ts';
import type { SamlVerifierOptions } from './saml-verifier.ts';
import { createScimTokenCache } from './scim-token.ts';
import { ssoEvents } from './events.ts';

const REFUSAL_SUMMARIES_TASK = 'saml-refusal-summaries';

export type SsoCapabilityOptions = {
  /** Tests only: a CA to trust when fetching IdP metadata (a local HTTPS server with a self-signed certificate). */
  idpMetadataCa?: string;
  /** SAML callbacks allowed per client address, a login that succeeds not counting (default DEFAULT_SAML_CALLBACK_LIMIT). */
  callbackLimit?: TokenBucketLimit;
  /** Tests only: the SAML verifier's worker module. */
  samlVerifier?: Omit<SamlVerifierOptions, 'threads'>;
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
      installSamlRuntime(ctx, { callbackLimit: options.callbackLimit ?? DEFAULT_SAML_CALLBACK_LIMIT, ...(options.samlVerifier ? { verifier: options.samlVerifier } : {}) });
    },
    tasks: (ctx) => ({
      [REFUSAL_SUMMARIES_TASK]: async () => {
        const summary = await summariseSamlRefusals(ctx, new Date());
        if (summary.minutes.length > 0) ctx.logger.info(summary, 'SAML refusals recorded');
      },
    }),
    crontab: [`* * * * * ${REFUSAL_SUMMARIES_TASK}`],
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
      SamlLoginsRefused: (event) => ({
        action: 'auth.saml.logins_refused',
        targetType: 'employer',
        targetId: String(event.metadata.tenantId),
        details: event.data,
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
