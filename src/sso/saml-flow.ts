// The service-provider-initiated SAML login of one employer, from the redirect to the IdP to the
// sign-in token: settings from the read model, protocol state in Postgres, the user resolved or
// provisioned, and every outcome recorded as a SamlLogin* event (the audit trail).
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { issueSignInToken } from '../identity/commands.ts';
import { registerUser } from '../tenants/commands.ts';
import { emailUnavailable } from '../tenants/email-reservation.ts';
import { findUserByEmail } from '../../projections/tenants/queries.ts';
import { getSsoConfiguration } from '../../projections/sso/queries.ts';
import { normaliseReturnTo, postLoginLocation } from './return-to.ts';
import { EMAIL_NAME_ID_FORMAT, SamlValidationError, createAuthnRequestRedirect, validateSamlResponse, type SamlLogin, type SamlSpSettings } from './saml.ts';
import type { SamlLoginEvent, SamlLoginFailureReason, SsoSettings } from './events.ts';
import { samlLoginDecider, samlLoginStream } from './saml-login.ts';
import { postgresAssertionReplayCache, postgresSamlRequestStore } from './saml-stores.ts';

const SAML_ACTOR = { type: 'system', id: 'saml' } as const;

/** The SP's own URLs for an employer: what its IdP administrator enters, and what responses must name. */
export function serviceProviderUrls(ctx: AppContext, employerId: string) {
  const base = `${ctx.config.PUBLIC_BASE_URL}/api/auth/saml`;
  const id = encodeURIComponent(employerId);
  return { spEntityId: `${base}/metadata/${id}`, acsUrl: `${base}/callback/${id}`, spMetadataUrl: `${base}/metadata/${id}` };
}

export function spNameIdFormat(settings: SsoSettings): string {
  return settings.samlNameIdFormat ?? EMAIL_NAME_ID_FORMAT;
}

function spSettings(ctx: AppContext, employerId: string, settings: SsoSettings): SamlSpSettings {
  const { spEntityId, acsUrl } = serviceProviderUrls(ctx, employerId);
  const optional = (value: string | null) => value ?? undefined;
  return {
    employerId,
    spEntityId,
    acsUrl,
    idpEntryPoint: settings.samlEntryPoint ?? '',
    idpIssuer: settings.samlIssuer ?? '',
    idpCertificates: settings.samlCertificates,
    nameIdFormat: spNameIdFormat(settings),
    emailAttribute: optional(settings.samlEmailAttribute),
    firstNameAttribute: optional(settings.samlFirstNameAttribute),
    lastNameAttribute: optional(settings.samlLastNameAttribute),
    clockSkewMs: ctx.config.SAML_CLOCK_SKEW_MS,
  };
}

/** 404 for an unknown employer, 400 when its SAML is off; otherwise its SP settings. */
async function enabledSpSettings(ctx: AppContext, employerId: string): Promise<SamlSpSettings> {
  const { settings } = await getSsoConfiguration(ctx.db.slonik, employerId);
  if (!settings.samlEnabled) {
    throw new DomainError(400, 'SAML_NOT_ENABLED', `SAML sign-in is not enabled for employer ${employerId}; an administrator enables it with POST /api/employer/sso.`);
  }
  return spSettings(ctx, employerId, settings);
}

/** The IdP redirect URL for a new login; `returnTo` must pass the allowlist (400 otherwise). */
export async function startSamlLogin(ctx: AppContext, employerId: string, returnTo: string | undefined): Promise<string> {
  const settings = await enabledSpSettings(ctx, employerId);
  const target = returnTo === undefined ? null : normaliseReturnTo(returnTo, ctx.config);
  if (returnTo !== undefined && target === null) {
    throw new DomainError(400, 'RETURN_TO_NOT_ALLOWED', 'returnTo must be a path on this service or a URL on an allowed origin (RETURN_TO_ALLOWED_ORIGINS).');
  }
  // returnTo is kept with the request id rather than in RelayState (unsigned, 80 bytes at most).
  const { redirectUrl } = await createAuthnRequestRedirect(settings, postgresSamlRequestStore(ctx.db.slonik, target), '');
  return redirectUrl;
}

async function recordLogin(ctx: AppContext, employerId: string, event: SamlLoginEvent, context: CommandContext) {
  await handleCommand(ctx.commands, {
    streamName: samlLoginStream(employerId, event.data.loginId),
    decider: samlLoginDecider,
    command: { type: 'RecordSamlLogin', event },
    context,
  });
}

async function refuse(ctx: AppContext, employerId: string, reason: SamlLoginFailureReason, clientIp: string, error: DomainError): Promise<never> {
  const event: SamlLoginEvent = { type: 'SamlLoginFailed', data: { loginId: randomUUID(), reason, clientIp } };
  await recordLogin(ctx, employerId, event, { tenantId: employerId, actor: SAML_ACTOR });
  throw error;
}

/** The local user of a verified login: found by e-mail within the employer, or provisioned as a PATIENT. */
async function resolveUser(ctx: AppContext, employerId: string, login: SamlLogin, clientIp: string): Promise<{ userId: string; provisioned: boolean }> {
  for (let attempt = 1; ; attempt++) {
    const existing = await findUserByEmail(ctx.db.slonik, login.email);
    if (existing && existing.employer_id !== employerId) {
      return refuse(ctx, employerId, 'EMAIL_IN_OTHER_EMPLOYER', clientIp, emailUnavailable());
    }
    if (existing && !existing.active) {
      return refuse(ctx, employerId, 'USER_DEACTIVATED', clientIp, new DomainError(403, 'USER_DEACTIVATED', 'This user is deactivated.'));
    }
    if (existing) return { userId: existing.id, provisioned: false };
    try {
      const { userId } = await registerUser(ctx.commands, { tenantId: employerId, actor: SAML_ACTOR }, {
        employerId,
        role: 'PATIENT',
        profile: { email: login.email, userName: login.email, givenName: login.firstName ?? null, familyName: login.lastName ?? null, displayName: null, externalId: null },
        active: true,
        source: 'saml',
      });
      return { userId, provisioned: true };
    } catch (error) {
      // A concurrent first login (or SCIM) registered the address meanwhile: look again, once. Still
      // unavailable, it is held or its domain verified by another employer: one refusal for both.
      if (!(error instanceof DomainError && error.code === 'EMAIL_UNAVAILABLE')) throw error;
      if (attempt > 1) return refuse(ctx, employerId, 'EMAIL_IN_OTHER_EMPLOYER', clientIp, emailUnavailable());
    }
  }
}

/** Validates an IdP's POSTed response and returns where to send the browser (a sign-in token link). */
export async function finishSamlLogin(ctx: AppContext, employerId: string, samlResponse: string, clientIp: string): Promise<string> {
  let settings: SamlSpSettings;
  try {
    settings = await enabledSpSettings(ctx, employerId);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'SAML_NOT_ENABLED') return refuse(ctx, employerId, 'SAML_NOT_ENABLED', clientIp, error);
    throw error;
  }
  const requests = postgresSamlRequestStore(ctx.db.slonik);
  let login: SamlLogin;
  try {
    login = await validateSamlResponse(settings, { requests, replayCache: postgresAssertionReplayCache(ctx.db.slonik) }, samlResponse);
  } catch (error) {
    if (!(error instanceof SamlValidationError)) throw error;
    return refuse(ctx, employerId, error.reason, clientIp, new DomainError(401, 'SAML_RESPONSE_REJECTED', error.message, { reason: error.reason }));
  }
  const { userId, provisioned } = await resolveUser(ctx, employerId, login, clientIp);
  const context: CommandContext = { tenantId: employerId, actor: { type: 'user', id: userId } };
  await recordLogin(ctx, employerId, { type: 'SamlLoginSucceeded', data: { loginId: randomUUID(), userId, assertionId: login.assertionId, provisioned } }, context);
  const signIn = await issueSignInToken(ctx, context, { userId, via: 'saml' });
  return postLoginLocation(signIn, requests.consumedReturnTo());
}
