import { ssoProjection } from '../../projections/sso/projection.ts';
import type { Capability } from '../capability.ts';
import type { TokenBucketLimit } from '../http/token-buckets.ts';
import { ssoRoutes } from './routes.ts';
import { createScimTokenCache } from './scim-token.ts';
import { SSO_CONFIGURATION_EVENT_TYPES, ssoEvents, type SsoSettings } from './events.ts';
import { trustChangesOf } from './sso-configuration.ts';
import { SSO_TRUST_MAIL_TASK, trustMailTask } from './trust-mail.ts';

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
    // Every change of SAML trust is e-mailed to the employer's administrators (the task skips other updates).
    consumers: [{ name: 'sso-trust-mail', eventTypes: SSO_CONFIGURATION_EVENT_TYPES, task: SSO_TRUST_MAIL_TASK }],
    tasks: (ctx) => ({ [SSO_TRUST_MAIL_TASK]: trustMailTask(ctx) }),
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
