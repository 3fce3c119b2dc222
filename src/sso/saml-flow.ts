// The service-provider-initiated SAML login of one employer, from the redirect to the IdP to the
// sign-in token: settings from the read model, protocol state in Postgres, the user resolved or
// provisioned, a successful login recorded as an event and refusals counted (saml-refusals.ts).
//
// The callback's CPU budget: every callback spends a token of its client address's bucket before its
// body is read (a login that succeeds gives it back), its body and XML are bounded and screened before
// any parser runs, and the parsing and signature checks run in the verifier's worker threads.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext, StartContext } from '../app-context.ts';
import { handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { assertAllowed, clientAddressKey, createTokenBuckets, type TokenBucketLimit, type TokenBuckets } from '../http/token-buckets.ts';
import { issueSignInToken } from '../identity/commands.ts';
import { registerUser } from '../tenants/commands.ts';
import { applySamlAdminRoleMapping } from '../tenants/admin-role.ts';
import { emailUnavailable } from '../tenants/email-reservation.ts';
import { findUserByEmail } from '../../projections/tenants/queries.ts';
import { getSsoConfiguration } from '../../projections/sso/queries.ts';
import { normaliseReturnTo, postLoginLocation } from './return-to.ts';
import { EMAIL_NAME_ID_FORMAT, SamlValidationError, createAuthnRequestRedirect, validateSamlResponse, type SamlLogin, type SamlSpSettings } from './saml.ts';
import type { SamlLoginEvent, SamlLoginFailureReason, SsoSettings } from './events.ts';
import { samlLoginDecider, samlLoginStream } from './saml-login.ts';
import { createSamlRefusalCounter, type SamlRefusalCounter } from './saml-refusals.ts';
import { postgresAssertionReplayCache, postgresSamlRequestStore } from './saml-stores.ts';
import { createSamlVerifier, SamlVerifierBusyError, type SamlVerifier, type SamlVerifierOptions } from './saml-verifier.ts';

const SAML_ACTOR = { type: 'system', id: 'saml' } as const;

/**
 * Callbacks per client address: 5 a second with bursts of 50, per process, as for SCIM's failed
 * authentications. Browsers behind one corporate address rarely fail a login, and a login that
 * succeeds gives its token back, so in effect this limits refusals and callbacks in progress.
 */
export const DEFAULT_SAML_CALLBACK_LIMIT: TokenBucketLimit = { perSecond: 5, burst: 50 };

/** The per-process parts of SAML sign-in, created by the sso capability's start and handed to its routes. */
export type SamlRuntime = { verifier: SamlVerifier; refusals: SamlRefusalCounter; callbacksByAddress: TokenBuckets };

export function createSamlRuntime(ctx: StartContext, options: { callbackLimit: TokenBucketLimit; verifier?: Omit<SamlVerifierOptions, 'threads'> }): SamlRuntime {
  const verifier = createSamlVerifier({ threads: ctx.config.SAML_VERIFY_THREADS, ...options.verifier });
  const refusals = createSamlRefusalCounter({ pool: ctx.db.slonik, logger: ctx.logger });
  return { verifier, refusals, callbacksByAddress: createTokenBuckets(options.callbackLimit) };
}

/** Writes the refusals counted so far, then ends the verifier's threads. */
export async function stopSamlRuntime(saml: SamlRuntime): Promise<void> {
  await saml.refusals.stop();
  await saml.verifier.close();
}

/** Before the callback's body is read: a token of the client address, else 429 with retry-after. */
export function admitSamlCallback(saml: SamlRuntime, request: FastifyRequest, reply: FastifyReply): void {
  assertAllowed(saml.callbacksByAddress.take(clientAddressKey(request.ip)), reply, 'Too many refused SAML responses from this address');
}

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
    throw new DomainError('invalid', 'SAML_NOT_ENABLED', `SAML sign-in is not enabled for employer ${employerId}; an administrator enables it with POST /api/employer/sso.`);
  }
  return spSettings(ctx, employerId, settings);
}

/** The IdP redirect URL for a new login; `returnTo` must pass the allowlist (400 otherwise). */
export async function startSamlLogin(ctx: AppContext, saml: SamlRuntime, employerId: string, returnTo: string | undefined): Promise<string> {
  const settings = await enabledSpSettings(ctx, employerId);
  const target = returnTo === undefined ? null : normaliseReturnTo(returnTo, ctx.config);
  if (returnTo !== undefined && target === null) {
    throw new DomainError('invalid', 'RETURN_TO_NOT_ALLOWED', 'returnTo must be a path on this service or a URL on an allowed origin (RETURN_TO_ALLOWED_ORIGINS).');
  }
  // returnTo is kept with the request id rather than in RelayState (unsigned, 80 bytes at most).
  const { redirectUrl } = await createAuthnRequestRedirect(settings, postgresSamlRequestStore(ctx.db.slonik, target), '');
  saml.verifier.warm();
  return redirectUrl;
}

type Refuse = (reason: SamlLoginFailureReason, error: DomainError) => never;

/** The local user of a verified login: found by e-mail within the employer, or provisioned as a PATIENT. */
async function resolveUser(ctx: AppContext, employerId: string, login: SamlLogin, refuse: Refuse): Promise<{ userId: string; provisioned: boolean }> {
  for (let attempt = 1; ; attempt++) {
    const existing = await findUserByEmail(ctx.db.slonik, login.email);
    if (existing && existing.employer_id !== employerId) {
      refuse('EMAIL_IN_OTHER_EMPLOYER', emailUnavailable());
    }
    if (existing && !existing.active) refuse('USER_DEACTIVATED', new DomainError('forbidden', 'USER_DEACTIVATED', 'This user is deactivated.'));
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
      if (attempt > 1) refuse('EMAIL_IN_OTHER_EMPLOYER', emailUnavailable());
    }
  }
}

/**
 * Validates an IdP's POSTed response and returns where to send the browser (a sign-in token link).
 * An unknown employer (404) or one whose SAML is off (400) is refused before anything is counted.
 */
export async function finishSamlLogin(ctx: AppContext, saml: SamlRuntime, employerId: string, samlResponse: string, request: FastifyRequest, reply: FastifyReply): Promise<string> {
  const settings = await enabledSpSettings(ctx, employerId);
  const { verifier, refusals, callbacksByAddress } = saml;
  const refuse: Refuse = (reason, error) => {
    refusals.count(employerId, reason, request.ip);
    throw error;
  };
  const requests = postgresSamlRequestStore(ctx.db.slonik);
  let login: SamlLogin;
  try {
    const stores = { requests, replayCache: postgresAssertionReplayCache(ctx.db.slonik) };
    login = await validateSamlResponse(settings, stores, samlResponse, (spSettings, response) => verifier.verify(request.ip, spSettings, response));
  } catch (error) {
    if (error instanceof SamlVerifierBusyError) reply.header('retry-after', String(error.retryAfterSeconds));
    if (!(error instanceof SamlValidationError)) throw error;
    refuse(error.reason, new DomainError('unauthenticated', 'SAML_RESPONSE_REJECTED', error.message, { reason: error.reason }));
  }
  const { userId, provisioned } = await resolveUser(ctx, employerId, login, refuse);
  const context: CommandContext = { tenantId: employerId, actor: { type: 'user', id: userId } };
  await applySamlAdminRoleMapping(ctx, { tenantId: employerId, actor: SAML_ACTOR }, { userId, attributes: login.attributes });
  const event: SamlLoginEvent = { type: 'SamlLoginSucceeded', data: { loginId: randomUUID(), userId, assertionId: login.assertionId, provisioned } };
  await handleCommand(ctx.commands, { streamName: samlLoginStream(employerId, event.data.loginId), decider: samlLoginDecider, command: { type: 'RecordSamlLogin', event }, context });
  const signIn = await issueSignInToken(ctx, context, { userId, via: 'saml' });
  callbacksByAddress.refund(clientAddressKey(request.ip));
  return postLoginLocation(signIn, requests.consumedReturnTo());
}
