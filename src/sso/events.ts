// Events of the SSO configuration (src/sso/sso-configuration.ts) and of SAML login attempts
// (src/sso/saml-login.ts). The sso read model (projections/sso/) applies the configuration's: settings
// changed at once (SsoConfigurationUpdated), and SAML trust changes made with an API key, pending until
// an administrator confirms them in a session (SsoTrustChangeProposed, ...Confirmed, ...Discarded),
// the IdP metadata read again (SamlMetadataRefreshed, ...RefreshFailed) and expiry warnings.
import { z } from 'zod';
import { eventSchema, type EventOf } from '../event-store/schemas.ts';

const ssoSettings = z.object({
  samlEnabled: z.boolean(),
  samlMetadataUrl: z.string().nullable(),
  samlEntryPoint: z.string().nullable(),
  /** PEM certificates the IdP signs with; several during a key rollover. */
  samlCertificates: z.array(z.string()),
  samlIssuer: z.string().nullable(),
  samlNameIdFormat: z.string().nullable(),
  samlEmailAttribute: z.string().nullable(),
  samlFirstNameAttribute: z.string().nullable(),
  samlLastNameAttribute: z.string().nullable(),
  /** The IdP's Single Logout URL (HTTP-Redirect): where a sign-out here sends the signed LogoutRequest. */
  samlLogoutUrl: z.string().nullable(),
  /** AuthnRequests signed with the SP key (saml-sp-keys.ts); the SP metadata says AuthnRequestsSigned. */
  samlSignAuthnRequests: z.boolean(),
  /** Unsolicited (IdP-initiated) responses accepted, with every check but InResponseTo (src/sso/saml.ts). */
  samlIdpInitiatedLogin: z.boolean(),
  scimEnabled: z.boolean(),
});
export type SsoSettings = z.infer<typeof ssoSettings>;

/**
 * The settings that decide whom a SAML response signs in: which IdP is trusted (entry point,
 * certificates, issuer, or the metadata URL that fills them), whether SAML is on, and which value of
 * the assertion names the user (the e-mail attribute, the NameID format), and whether responses nobody
 * asked for sign in (IdP-initiated login: a login started elsewhere lands here). An API key cannot change them
 * alone (sso-configuration.ts); the name attributes and SCIM settings are not among them.
 */
export const SAML_TRUST_SETTINGS = ['samlEnabled', 'samlMetadataUrl', 'samlEntryPoint', 'samlCertificates', 'samlIssuer', 'samlNameIdFormat', 'samlEmailAttribute', 'samlIdpInitiatedLogin'] as const satisfies ReadonlyArray<keyof SsoSettings>;
export type SamlTrustSetting = (typeof SAML_TRUST_SETTINGS)[number];
export const samlTrustChangesSchema = ssoSettings.pick(Object.fromEntries(SAML_TRUST_SETTINGS.map((key) => [key, true])) as Record<SamlTrustSetting, true>).partial();
export type SamlTrustChanges = z.infer<typeof samlTrustChangesSchema>;

const scimTokenRecord = z.object({ tokenId: z.string(), tokenHash: z.string(), issuedAt: z.string() });
export type ScimTokenRecord = z.infer<typeof scimTokenRecord>;

const ssoConfigurationUpdated = eventSchema('SsoConfigurationUpdated', z.object({
  employerId: z.string(),
  /** Only the settings that changed. */
  changes: ssoSettings.partial(),
  issuedScimToken: scimTokenRecord.nullable(),
  revokedScimTokenId: z.string().nullable(),
}));

/**
 * A rotation kept the token it replaced working until `endsAt` (src/sso/scim-token.ts): the IdP
 * provisions on with it until its administrator pastes the new one. A later overlap replaces this one.
 */
const scimTokenOverlapStarted = eventSchema('ScimTokenOverlapStarted', z.object({ employerId: z.string(), tokenId: z.string(), tokenHash: z.string(), endsAt: z.string() }));
/** The replaced token stopped before its overlap's end: ended by an administrator, by SCIM turned off, or by a rotation without overlap. */
const scimTokenOverlapEnded = eventSchema('ScimTokenOverlapEnded', z.object({ employerId: z.string(), tokenId: z.string() }));

/**
 * Trust changes an API key asked for, not in effect: `changes` holds every pending value (an earlier
 * pending change's too, which this one replaces: `replacedChangeId`).
 */
const ssoTrustChangeProposed = eventSchema('SsoTrustChangeProposed', z.object({
  employerId: z.string(),
  changeId: z.string(),
  changes: samlTrustChangesSchema,
  replacedChangeId: z.string().nullable(),
}));
/** An administrator confirmed the pending change in a session: `changes` took effect (those that still differed). */
const ssoTrustChangeConfirmed = eventSchema('SsoTrustChangeConfirmed', z.object({ employerId: z.string(), changeId: z.string(), changes: samlTrustChangesSchema }));
const ssoTrustChangeDiscarded = eventSchema('SsoTrustChangeDiscarded', z.object({ employerId: z.string(), changeId: z.string() }));

/** A signing certificate the IdP's metadata no longer lists: still trusted until `trustedUntil` (the grace period). */
const retiringCertificate = z.object({ certificate: z.string(), trustedUntil: z.string() });
export type RetiringCertificate = z.infer<typeof retiringCertificate>;

/**
 * The IdP metadata at `metadataUrl` (the one in effect) read again, by the daily job or an administrator,
 * and what changed: certificates it newly lists (trusted from now), certificates it no longer lists
 * (retiring: trusted until the grace period ends), retiring ones whose grace ended (no longer trusted),
 * and its SSO entry point when that moved. All empty: a refresh that succeeded after a failed one.
 */
const samlMetadataRefreshed = eventSchema('SamlMetadataRefreshed', z.object({
  employerId: z.string(),
  metadataUrl: z.string(),
  addedCertificates: z.array(z.string()),
  retiringCertificates: z.array(retiringCertificate),
  removedCertificates: z.array(z.string()),
  entryPoint: z.string().nullable(),
}));
/** Reading the metadata failed (unreachable, invalid, or naming another IdP): the last good metadata stays in effect. */
const samlMetadataRefreshFailed = eventSchema('SamlMetadataRefreshFailed', z.object({ employerId: z.string(), metadataUrl: z.string(), code: z.string(), message: z.string() }));

/**
 * A key pair of the service as this employer's SAML service provider (src/sso/saml-sp-keys.ts): the
 * certificate in clear, the private key sealed (src/crypto/secret-box.ts; associated data
 * `saml-sp-key:<employerId>:<keyId>`). `retiring`: the keys it replaces, in use until `retiresAt` (the overlap).
 */
const spKeyRecord = z.object({ keyId: z.string(), certificate: z.string(), sealedPrivateKey: z.string(), issuedAt: z.string(), retiresAt: z.string().nullable() });
export type SpKeyRecord = z.infer<typeof spKeyRecord>;
const samlSpKeyIssued = eventSchema('SamlSpKeyIssued', z.object({
  employerId: z.string(),
  key: spKeyRecord,
  retiring: z.array(z.object({ keyId: z.string(), retiresAt: z.string() })),
}));

/** Days before the last valid IdP signing certificate expires when the administrators are warned, once each. */
export const CERTIFICATE_EXPIRY_WARNING_DAYS = [30, 7, 1] as const;
/** The administrators were warned that the last valid IdP signing certificate expires at `validTo`. */
const samlCertificateExpiryWarned = eventSchema('SamlCertificateExpiryWarned', z.object({
  employerId: z.string(),
  fingerprintSha256: z.string(),
  subject: z.string(),
  validTo: z.string(),
  daysBefore: z.literal([...CERTIFICATE_EXPIRY_WARNING_DAYS]),
}));

/** Settings of an employer that never saved any. */
export const DEFAULT_SSO_SETTINGS: SsoSettings = {
  samlEnabled: false,
  samlMetadataUrl: null,
  samlEntryPoint: null,
  samlCertificates: [],
  samlIssuer: null,
  samlNameIdFormat: null,
  samlEmailAttribute: null,
  samlFirstNameAttribute: null,
  samlLastNameAttribute: null,
  samlLogoutUrl: null,
  samlSignAuthnRequests: false,
  samlIdpInitiatedLogin: false,
  scimEnabled: false,
};

/** Why a SAML response was refused (src/sso/saml-checks.ts, saml.ts). */
const SAML_FAILURE_REASONS = [
  'MALFORMED',
  'IDP_STATUS_ERROR',
  'UNSIGNED',
  'SIGNATURE_INVALID',
  'SHA1_REFUSED',
  'ALGORITHM_REFUSED',
  'MULTIPLE_ASSERTIONS',
  'ISSUER_MISMATCH',
  'AUDIENCE_MISMATCH',
  'DESTINATION_MISMATCH',
  'RECIPIENT_MISMATCH',
  'EXPIRED',
  'NOT_YET_VALID',
  'UNKNOWN_IN_RESPONSE_TO',
  'REPLAYED',
  'EMAIL_MISSING',
] as const;

export type SamlFailureReason = (typeof SAML_FAILURE_REASONS)[number];

/** Why a SAML login was refused: the response, or what the service found of the user it names. */
export const SAML_LOGIN_FAILURE_REASONS = [...SAML_FAILURE_REASONS, 'SAML_NOT_ENABLED', 'USER_DEACTIVATED', 'EMAIL_IN_OTHER_EMPLOYER'] as const;
export type SamlLoginFailureReason = (typeof SAML_LOGIN_FAILURE_REASONS)[number];

/** `idpInitiated`: an unsolicited response (IdP-initiated login); version 1 had only SP-initiated ones. */
const samlLoginSucceeded = eventSchema(
  'SamlLoginSucceeded',
  z.object({ loginId: z.string(), userId: z.string(), assertionId: z.string(), provisioned: z.boolean(), idpInitiated: z.boolean() }),
  { version: 2, upcasters: { 1: (data) => ({ ...data, idpInitiated: false }) } },
);
/** One refusal each: written until refusals were counted instead (SamlLoginsRefused); kept to read that history. */
const samlLoginFailed = eventSchema('SamlLoginFailed', z.object({ loginId: z.string(), reason: z.enum(SAML_LOGIN_FAILURE_REASONS), clientIp: z.string() }));

/**
 * The refused SAML callbacks of an employer (whose SAML was on) in one minute, counted by reason
 * (src/sso/saml-refusals.ts). `clientAddresses`, a sample of up to 10 per reason, helps an auditor tell
 * an IdP misconfiguration (many addresses) from probing (few, odd ones).
 */
const samlLoginsRefused = eventSchema('SamlLoginsRefused', z.object({
  windowStart: z.string(),
  windowEnd: z.string(),
  refusals: z.number().int(),
  byReason: z.array(z.object({ reason: z.enum(SAML_LOGIN_FAILURE_REASONS), refusals: z.number().int(), clientAddresses: z.array(z.string()) })),
}));

const samlLoginEvents = [samlLoginSucceeded, samlLoginFailed] as const;
const ssoConfigurationEvents = [
  ssoConfigurationUpdated,
  ssoTrustChangeProposed,
  ssoTrustChangeConfirmed,
  ssoTrustChangeDiscarded,
  samlMetadataRefreshed,
  samlMetadataRefreshFailed,
  samlCertificateExpiryWarned,
  samlSpKeyIssued,
  scimTokenOverlapStarted,
  scimTokenOverlapEnded,
] as const;
export const ssoEvents = [...ssoConfigurationEvents, ...samlLoginEvents, samlLoginsRefused] as const;

export type SsoConfigurationUpdated = EventOf<typeof ssoConfigurationUpdated>;
export type SsoTrustChangeProposed = EventOf<typeof ssoTrustChangeProposed>;
export type SsoTrustChangeConfirmed = EventOf<typeof ssoTrustChangeConfirmed>;
export type SsoTrustChangeDiscarded = EventOf<typeof ssoTrustChangeDiscarded>;
export type SamlMetadataRefreshed = EventOf<typeof samlMetadataRefreshed>;
export type SamlCertificateExpiryWarned = EventOf<typeof samlCertificateExpiryWarned>;
export type SamlSpKeyIssued = EventOf<typeof samlSpKeyIssued>;
export type SsoConfigurationEvent = EventOf<(typeof ssoConfigurationEvents)[number]>;
/** The event types of the configuration's stream, for its consumers. */
export const SSO_CONFIGURATION_EVENT_TYPES = ssoConfigurationEvents.map((schema) => schema.type);
export type SamlLoginEvent = EventOf<(typeof samlLoginEvents)[number]>;
export type SamlLoginsRefused = EventOf<typeof samlLoginsRefused>;
