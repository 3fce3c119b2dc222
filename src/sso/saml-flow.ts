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
import { endSession, endUserSessions, issueSignInToken } from '../identity/commands.ts';
import { registerUser } from '../tenants/commands.ts';
import { applySamlAdminRoleMapping } from '../tenants/admin-role.ts';
import { emailUnavailable } from '../tenants/email-reservation.ts';
import { findUserByEmail, userEmailOf } from '../../projections/tenants/queries.ts';
import { getSsoConfiguration, type SsoConfigurationView } from '../../projections/sso/queries.ts';
import { normaliseReturnTo, postLoginLocation } from './return-to.ts';
import {
  EMAIL_NAME_ID_FORMAT,
  SamlValidationError,
  createAuthnRequestRedirect,
  logoutRequestRedirect,
  logoutResponseRedirect,
  validateSamlResponse,
  verifyIdpLogoutRedirect,
  type IdpLogoutMessage,
  type SamlLogin,
  type SamlSpSettings,
} from './saml.ts';
import type { SamlLoginEvent, SamlLoginFailureReason, SsoSettings } from './events.ts';
import { trustedCertificates } from './saml-certificates.ts';
import { openSpPrivateKey, spKeysInUse } from './saml-sp-keys.ts';
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
  return { spEntityId: `${base}/metadata/${id}`, acsUrl: `${base}/callback/${id}`, spMetadataUrl: `${base}/metadata/${id}`, singleLogoutUrl: `${base}/logout/${id}` };
}

export function spNameIdFormat(settings: SsoSettings): string {
  return settings.samlNameIdFormat ?? EMAIL_NAME_ID_FORMAT;
}

/**
 * The SP settings of a SAML step. Private keys are opened only for the step that uses them: the
 * signing key to start a login whose request is signed and for logout messages, the decryption keys
 * for an encrypted response.
 */
function spSettings(ctx: AppContext, employerId: string, { settings, metadataRefresh, spKeys }: SsoConfigurationView, use: 'start' | 'plain response' | 'encrypted response' | 'logout'): SamlSpSettings {
  const { spEntityId, acsUrl } = serviceProviderUrls(ctx, employerId);
  const optional = (value: string | null) => value ?? undefined;
  const keysInUse = spKeysInUse(spKeys, new Date());
  const [signingKey] = keysInUse;
  return {
    ...(((use === 'start' && settings.samlSignAuthnRequests) || use === 'logout') && signingKey ? { spSigningKey: openSpPrivateKey(employerId, signingKey, ctx.encryptionKey) } : {}),
    allowIdpInitiated: settings.samlIdpInitiatedLogin,
    ...(settings.samlLogoutUrl ? { idpLogoutUrl: settings.samlLogoutUrl } : {}),
    decryptionKeys: use === 'encrypted response' ? keysInUse.map((key) => openSpPrivateKey(employerId, key, ctx.encryptionKey)) : [],
    employerId,
    spEntityId,
    acsUrl,
    idpEntryPoint: settings.samlEntryPoint ?? '',
    idpIssuer: settings.samlIssuer ?? '',
    idpCertificates: trustedCertificates(settings.samlCertificates, metadataRefresh.retiringCertificates, new Date()),
    nameIdFormat: spNameIdFormat(settings),
    emailAttribute: optional(settings.samlEmailAttribute),
    firstNameAttribute: optional(settings.samlFirstNameAttribute),
    lastNameAttribute: optional(settings.samlLastNameAttribute),
    clockSkewMs: ctx.config.SAML_CLOCK_SKEW_MS,
  };
}

/** 404 for an unknown employer, 400 when its SAML is off; otherwise its SP settings. */
async function enabledSpSettings(ctx: AppContext, employerId: string, use: Parameters<typeof spSettings>[3]): Promise<SamlSpSettings> {
  const configuration = await getSsoConfiguration(ctx.db.slonik, employerId);
  if (!configuration.settings.samlEnabled) {
    throw new DomainError('invalid', 'SAML_NOT_ENABLED', `SAML sign-in is not enabled for employer ${employerId}; an administrator enables it with POST /api/employer/sso.`);
  }
  return spSettings(ctx, employerId, configuration, use);
}

/** The IdP redirect URL for a new login; `returnTo` must pass the allowlist (400 otherwise). */
export async function startSamlLogin(ctx: AppContext, saml: SamlRuntime, employerId: string, returnTo: string | undefined): Promise<string> {
  const settings = await enabledSpSettings(ctx, employerId, 'start');
  const target = returnTo === undefined ? null : normaliseReturnTo(returnTo, ctx.config);
  if (returnTo !== undefined && target === null) {
    throw new DomainError('invalid', 'RETURN_TO_NOT_ALLOWED', 'returnTo must be a path on this service or a URL on an allowed origin (RETURN_TO_ALLOWED_ORIGINS).');
  }
  // returnTo is kept with the request id rather than in RelayState (unsigned, 80 bytes at most).
  const { redirectUrl } = await createAuthnRequestRedirect(settings, postgresSamlRequestStore(ctx.db.slonik, target), '');
  saml.verifier.warm();
  return redirectUrl;
}

/** Whether the base64 response's XML names an EncryptedAssertion (a cheap look before it is screened and parsed). */
function mentionsEncryptedAssertion(samlResponseBase64: string): boolean {
  return Buffer.from(samlResponseBase64, 'base64').includes('EncryptedAssertion');
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
 * `relayState` matters only to an IdP-initiated login: where it lands, if the returnTo allowlist admits it.
 */
export async function finishSamlLogin(ctx: AppContext, saml: SamlRuntime, employerId: string, samlResponse: string, relayState: string | undefined, request: FastifyRequest, reply: FastifyReply): Promise<string> {
  // A plain response needs no private key (the verifier checks the decrypted content either way).
  const settings = await enabledSpSettings(ctx, employerId, mentionsEncryptedAssertion(samlResponse) ? 'encrypted response' : 'plain response');
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
  const event: SamlLoginEvent = { type: 'SamlLoginSucceeded', data: { loginId: randomUUID(), userId, assertionId: login.assertionId, provisioned, idpInitiated: login.idpInitiated } };
  await handleCommand(ctx.commands, { streamName: samlLoginStream(employerId, event.data.loginId), decider: samlLoginDecider, command: { type: 'RecordSamlLogin', event }, context });
  const signIn = await issueSignInToken(ctx, context, { userId, via: 'saml' });
  callbacksByAddress.refund(clientAddressKey(request.ip));
  const landing = login.idpInitiated ? (relayState === undefined ? null : normaliseReturnTo(relayState, ctx.config)) : requests.consumedReturnTo();
  return postLoginLocation(signIn, landing);
}

/** How long a LogoutRequest id is remembered: a replay within it is refused (after it, it could only sign out again). */
const LOGOUT_REQUEST_MEMORY_MS = 24 * 3600_000;

/**
 * SP-initiated Single Logout: the session ends here first; then, when the employer's IdP has a Single
 * Logout URL and the employer an SP key, the redirect carrying a LogoutRequest signed with it (null: none).
 */
export async function startSamlLogout(ctx: AppContext, context: CommandContext, session: { employerId: string; userId: string; sessionId: string }): Promise<string | null> {
  await endSession(ctx, context, { sessionId: session.sessionId, reason: 'logout' });
  const configuration = await getSsoConfiguration(ctx.db.slonik, session.employerId);
  if (!configuration.settings.samlEnabled || !configuration.settings.samlLogoutUrl) return null;
  const settings = spSettings(ctx, session.employerId, configuration, 'logout');
  const email = await userEmailOf(ctx.db.slonik, session.employerId, session.userId);
  if (!settings.spSigningKey || !email) return null;
  return logoutRequestRedirect(settings, email);
}

/**
 * A Single Logout message from the IdP (HTTP-Redirect). A LogoutRequest, verified and seen for the
 * first time, ends every session of the user it names here and is answered with a signed
 * LogoutResponse; a LogoutResponse (to our own request) sends the browser to the console.
 */
export async function finishIdpLogout(ctx: AppContext, employerId: string, query: Record<string, string>, rawQuery: string): Promise<string> {
  const configuration = await getSsoConfiguration(ctx.db.slonik, employerId);
  if (!configuration.settings.samlEnabled) throw new DomainError('invalid', 'SAML_NOT_ENABLED', `SAML sign-in is not enabled for employer ${employerId}.`);
  const settings = spSettings(ctx, employerId, configuration, 'logout');
  const refused = (reason: string, message: string) => new DomainError('unauthenticated', 'SAML_LOGOUT_REJECTED', message, { reason });
  let message: IdpLogoutMessage;
  try {
    message = await verifyIdpLogoutRedirect(settings, query, rawQuery);
  } catch (error) {
    if (error instanceof SamlValidationError) throw refused(error.reason, error.message);
    throw error;
  }
  if (message.kind === 'response') return `${ctx.config.PUBLIC_BASE_URL}/`;
  if (!(await postgresAssertionReplayCache(ctx.db.slonik).remember(`logout:${message.requestId}`, employerId, new Date(Date.now() + LOGOUT_REQUEST_MEMORY_MS)))) {
    throw refused('REPLAYED', 'This SAML LogoutRequest has already been processed.');
  }
  const user = await findUserByEmail(ctx.db.slonik, message.nameId.trim().toLowerCase());
  if (user && user.employer_id === employerId) await endUserSessions(ctx, { tenantId: employerId, actor: SAML_ACTOR }, { userId: user.id, reason: 'saml_logout' });
  if (!settings.spSigningKey) throw new DomainError('invalid', 'SAML_SP_KEY_MISSING', 'The sessions ended, but the LogoutResponse cannot be signed: the employer has no SP key (rotate the SP key to make one).');
  return logoutResponseRedirect(settings, message.profile, query.RelayState ?? '');
}
