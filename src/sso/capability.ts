import { ssoProjection } from '../../projections/sso/projection.ts';
import type { Capability } from '../capability.ts';
import type { TokenBucketLimit } from '../http/token-buckets.ts';
import { ssoConfigurationRoutes } from './routes/configuration.ts';
import { samlRoutes } from './routes/saml.ts';
import { ssoTrustChangeRoutes } from './routes/trust-changes.ts';
import { createSamlRuntime, DEFAULT_SAML_CALLBACK_LIMIT, stopSamlRuntime, type SamlRuntime } from './saml-flow.ts';
import { summariseSamlRefusals } from './saml-refusals.ts';
import type { SamlVerifierOptions } from './saml-verifier.ts';
import { createScimTokenCache, scimTokenLookup } from './scim-token.ts';
import { SSO_CONFIGURATION_EVENT_TYPES, ssoEvents, type SsoSettings } from './events.ts';
import { trustChangesOf } from './sso-configuration.ts';
import { SSO_TRUST_MAIL_TASK, trustMailTask } from './trust-mail.ts';

const REFUSAL_SUMMARIES_TASK = 'saml-refusal-summaries';

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
    routes: [ssoConfigurationRoutes(options), ssoTrustChangeRoutes, samlRoutes],
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
    tasks: (ctx) => ({
      [REFUSAL_SUMMARIES_TASK]: async () => {
        const summary = await summariseSamlRefusals(ctx, new Date());
        if (summary.minutes.length > 0) ctx.logger.info(summary, 'SAML refusals recorded');
      },
      [SSO_TRUST_MAIL_TASK]: trustMailTask(ctx),
    }),
    crontab: [`* * * * * ${REFUSAL_SUMMARIES_TASK}`],
    projections: [ssoProjection],
    // Every change of SAML trust is e-mailed to the employer's administrators (the task skips other updates).
    consumers: [{ name: 'sso-trust-mail', eventTypes: SSO_CONFIGURATION_EVENT_TYPES, task: SSO_TRUST_MAIL_TASK }],
    auditMappers: {
      // Field names only: certificates and URLs stay in the event, token hashes never reach the audit log.
      SsoConfigurationUpdated: (event) => ({
        action: 'sso.config.update',
        targetType: 'employer',
        targetId: String(event.data.employerId),
        details: {
          fields: Object.keys(event.data.changes as object).sort(),
          trustFields: trustFieldsOf(event.data.changes),
          scimTokenIssued: event.data.issuedScimToken !== null,
          scimTokenRevoked: event.data.revokedScimTokenId !== null,
        },
      }),
      SsoTrustChangeProposed: (event) => ({
        action: 'sso.trust_change.propose',
        targetType: 'employer',
        targetId: String(event.data.employerId),
        details: { changeId: event.data.changeId, fields: trustFieldsOf(event.data.changes), replacedChangeId: event.data.replacedChangeId },
      }),
      SsoTrustChangeConfirmed: (event) => ({
        action: 'sso.trust_change.confirm',
        targetType: 'employer',
        targetId: String(event.data.employerId),
        details: { changeId: event.data.changeId, fields: trustFieldsOf(event.data.changes) },
      }),
      SsoTrustChangeDiscarded: (event) => ({
        action: 'sso.trust_change.discard',
        targetType: 'employer',
        targetId: String(event.data.employerId),
        details: { changeId: event.data.changeId },
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

/** The SAML trust settings among an event's changes (field names only). */
function trustFieldsOf(changes: unknown): string[] {
  return Object.keys(trustChangesOf(changes as Partial<SsoSettings>)).sort();
}
