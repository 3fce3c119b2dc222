// SAML 2.0 service-provider core: AuthnRequest redirect, response validation, SP metadata. No database:
// the outstanding-request store and the assertion replay cache are ports the caller implements (Postgres).
//
// node-saml 5.1 verifies the signatures (only against the configured certificates, never KeyInfo; only
// the signed bytes are used), audience and Conditions times. Everything else is checked here, in this order:
// size and shape before parsing (screenSamlResponse), DTD/well-formedness, SHA-1 and unknown algorithms,
// IdP status, one assertion only (wrapping), some signature present, node-saml, then on the verified
// assertion: issuers, Destination, bearer Recipient and time window, InResponseTo, e-mail (all of these,
// verifySamlResponse, need no state and may run in a worker thread); last the two state changes, replay
// cache then request consumption (in that order so that a replayed response is reported as REPLAYED, not
// as an unknown request).
//
// Decisions where the spec is silent:
// - Accepted signatures: the whole Response (covering its assertion), or the Assertion inside an unsigned
//   Response. node-saml is run with wantAuthnResponseSigned=false and wantAssertionsSigned=false, which is
//   exactly that rule (with wantAssertionsSigned=true a response signed only as a whole would be refused).
// - Only RSA-SHA256/512 with SHA-256/512 digests; SHA-1 anywhere in the message is refused.
// - IdP-initiated (unsolicited) responses are refused unless the employer turned them on
//   (samlIdpInitiatedLogin): InResponseTo is read from the signed assertion's bearer
//   SubjectConfirmationData; the Response's own InResponseTo, if present, must agree. An unsolicited one
//   passes every other check (audience, Destination, Recipient, time) and the replay cache (one use).
//   Its RelayState, unsigned, is only a landing place that must pass the returnTo allowlist.
// - Outstanding AuthnRequests expire after AUTHN_REQUEST_TTL_MS (15 min: long enough for MFA enrolment).
// - The replay cache keeps an assertion id until the earliest NotOnOrAfter of the assertion plus the skew.
// - NameID format: the configured one, else emailAddress, in both the AuthnRequest and the metadata.
// - No RequestedAuthnContext is sent: Entra ID refuses PasswordProtectedTransport for MFA/passwordless users.
// - Encrypted assertions (one EncryptedAssertion, the Response's child) are decrypted with the SP keys in use,
//   then checked as plain ones, signature included; xml-encryption refuses RSA 1.5 and 3DES.
// - AuthnRequests are signed (RSA-SHA256, HTTP-Redirect binding's query signature) when the employer asks
//   for it, with the SP key that signs (saml-sp-keys.ts).
// - E-mail: the first value of the configured e-mail attribute, else the NameID when its format is
//   emailAddress; trimmed and lower-cased. Unset first/last-name attributes are not guessed.
// - A Response-level Issuer is optional (SAML core) but must equal the configured issuer when present.
import { randomUUID } from 'node:crypto';
import { SAML, ValidateInResponseTo, type Profile } from '@node-saml/node-saml';
import { z } from 'zod';
import {
  SamlValidationError,
  parseSamlXml,
  readAssertionContent,
  refuseWeakAlgorithms,
  requireAgreeingResponseInResponseTo,
  requireBearerConfirmation,
  requireDestination,
  requireIssuer,
  requireResponseRoot,
  requireSingleAssertion,
  requireSomeSignature,
  requireSuccessStatus,
  requireXmlWithinBudget,
} from './saml-checks.ts';
import type { SamlFailureReason } from './events.ts';
import { EMAIL_MAX, SAML_RESPONSE_MAX, SAML_RESPONSE_XML_MAX_BYTES, SAML_XML_ATTRIBUTES_MAX, SAML_XML_DEPTH_MAX, SAML_XML_ELEMENTS_MAX } from '../http/limits.ts';

export { SamlValidationError } from './saml-checks.ts';
export type { SamlFailureReason } from './events.ts';

export const EMAIL_NAME_ID_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
export const AUTHN_REQUEST_TTL_MS = 15 * 60 * 1000;
const XML_BUDGET = { elements: SAML_XML_ELEMENTS_MAX, attributes: SAML_XML_ATTRIBUTES_MAX, depth: SAML_XML_DEPTH_MAX };
// Base64 as IdPs send it: some break it into lines.
const BASE64 = /^[A-Za-z0-9+/\s]*=*\s*$/;

export type SamlSpSettings = {
  employerId: string;
  spEntityId: string;
  acsUrl: string;
  idpEntryPoint: string;
  idpIssuer: string;
  /** PEM or bare base64 X.509 certificates; several during an IdP key rollover. */
  idpCertificates: string[];
  nameIdFormat?: string;
  emailAttribute?: string;
  firstNameAttribute?: string;
  lastNameAttribute?: string;
  clockSkewMs: number;
  /** The SP's private key (PEM) that signs: AuthnRequests when the employer asks, logout messages always. */
  spSigningKey?: string;
  /** The SP's private keys in use (PEM), any of which an encrypted assertion may be encrypted to. */
  decryptionKeys: string[];
  /** Unsolicited (IdP-initiated) responses accepted; default no. */
  allowIdpInitiated?: boolean;
  /** The IdP's Single Logout URL (HTTP-Redirect). */
  idpLogoutUrl?: string;
};

/** Outstanding AuthnRequest ids; shared by every process (Postgres). */
export type SamlRequestStore = {
  save(requestId: string, employerId: string, expiresAt: Date): Promise<void>;
  /** Atomically removes the id; true only if it was outstanding, unexpired and of this employer. */
  consume(requestId: string, employerId: string): Promise<boolean>;
};

/** Assertion ids already used; shared by every process (Postgres). */
export type AssertionReplayCache = {
  /** Records the id until `until`; false when it was already recorded. */
  remember(assertionId: string, employerId: string, until: Date): Promise<boolean>;
};

export type SamlStores = { requests: SamlRequestStore; replayCache: AssertionReplayCache };

export type SamlLogin = {
  nameId: string;
  nameIdFormat: string;
  email: string;
  firstName?: string;
  lastName?: string;
  assertionId: string;
  sessionNotOnOrAfter?: Date;
  attributes: Record<string, string[]>;
  /** Answering no request of ours: an IdP-initiated login. */
  idpInitiated: boolean;
};

function nodeSaml(settings: SamlSpSettings, generateUniqueId?: () => string, decryptionKey?: string): SAML {
  if (settings.idpCertificates.length === 0) throw new Error(`SAML of employer ${settings.employerId} has no IdP certificate configured`);
  if (!(settings.clockSkewMs >= 0)) throw new Error('clockSkewMs must be zero or more'); // node-saml reads -1 as "skip time checks"
  return new SAML({
    issuer: settings.spEntityId,
    audience: settings.spEntityId,
    callbackUrl: settings.acsUrl,
    entryPoint: settings.idpEntryPoint,
    idpCert: settings.idpCertificates,
    identifierFormat: settings.nameIdFormat ?? EMAIL_NAME_ID_FORMAT,
    acceptedClockSkewMs: settings.clockSkewMs,
    wantAuthnResponseSigned: false,
    wantAssertionsSigned: false,
    // InResponseTo is checked below from the signed assertion against the shared store, consumed atomically.
    validateInResponseTo: ValidateInResponseTo.never,
    disableRequestedAuthnContext: true,
    ...(settings.spSigningKey ? { privateKey: settings.spSigningKey, signatureAlgorithm: 'sha256' as const } : {}),
    ...(generateUniqueId ? { generateUniqueId } : {}),
    ...(decryptionKey ? { decryptionPvk: decryptionKey } : {}),
    ...(settings.idpLogoutUrl ? { logoutUrl: settings.idpLogoutUrl, idpIssuer: settings.idpIssuer } : {}),
  });
}

/** Builds the HTTP-Redirect URL to the IdP and remembers the request id in the store. */
export async function createAuthnRequestRedirect(
  settings: SamlSpSettings,
  store: SamlRequestStore,
  relayState: string,
): Promise<{ redirectUrl: string; requestId: string }> {
  const requestId = `_${randomUUID()}`; // xs:ID must not start with a digit
  await store.save(requestId, settings.employerId, new Date(Date.now() + AUTHN_REQUEST_TTL_MS));
  const redirectUrl = await nodeSaml(settings, () => requestId).getAuthorizeUrlAsync(relayState, undefined, {});
  return { redirectUrl, requestId };
}

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const base64Of = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');

export type SpMetadataInput = Pick<SamlSpSettings, 'spEntityId' | 'acsUrl' | 'nameIdFormat'> & {
  /** Where the IdP sends LogoutRequests and LogoutResponses (HTTP-Redirect). */
  singleLogoutUrl: string;
  /** The SP certificates in use, each published for signing and for encryption. */
  certificates: string[];
  authnRequestsSigned: boolean;
};

/**
 * SP metadata for the IdP administrator: entity id, ACS URL (HTTP-POST), NameID format, and the SP's
 * certificates with use="signing" and use="encryption" (node-saml's generator publishes one encryption
 * certificate only, and cannot say AuthnRequestsSigned without signing the metadata).
 */
export function generateSpMetadata(input: SpMetadataInput): string {
  const keyDescriptors = input.certificates.flatMap((pem) =>
    ['signing', 'encryption'].map((use) => `<KeyDescriptor use="${use}"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${base64Of(pem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor>`),
  );
  return (
    `<?xml version="1.0"?>\n<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${escapeXml(input.spEntityId)}">` +
    `<SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="${input.authnRequestsSigned}" WantAssertionsSigned="false">` +
    keyDescriptors.join('') +
    `<SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${escapeXml(input.singleLogoutUrl)}"/>` +
    `<NameIDFormat>${escapeXml(input.nameIdFormat ?? EMAIL_NAME_ID_FORMAT)}</NameIDFormat>` +
    `<AssertionConsumerService index="1" isDefault="true" Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${escapeXml(input.acsUrl)}"/>` +
    `</SPSSODescriptor></EntityDescriptor>`
  );
}

// node-saml throws plain Errors; after the structural checks above only these kinds remain.
const NODE_SAML_FAILURES: ReadonlyArray<[RegExp, SamlFailureReason, string]> = [
  [/audience/i, 'AUDIENCE_MISMATCH', 'The SAML assertion is not meant for this service (audience differs from the SP entity id).'],
  [/expired/i, 'EXPIRED', 'The SAML assertion has expired; sign in again.'],
  [/not yet valid/i, 'NOT_YET_VALID', 'The SAML assertion is not valid yet (check the clocks of the IdP and this server).'],
  [/signature/i, 'SIGNATURE_INVALID', 'The SAML signature does not verify against the configured IdP certificate(s).'],
];

/**
 * node-saml's verification; an encrypted assertion is decrypted with each SP key in use in turn (two at
 * most during a key's overlap), the first that gives a verified assertion winning.
 */
async function verifyWithNodeSaml(settings: SamlSpSettings, samlResponseBase64: string, encrypted: boolean): Promise<string> {
  const keys = encrypted ? settings.decryptionKeys : [undefined];
  if (keys.length === 0) throw new SamlValidationError('MALFORMED', 'The SAML assertion is encrypted, but this employer has no SP key to decrypt it with (rotate the SP key to make one).');
  let failure: unknown;
  for (const key of keys) {
    try {
      const { profile } = await nodeSaml(settings, undefined, key).validatePostResponseAsync({ SAMLResponse: samlResponseBase64 });
      if (!profile) throw new Error('Invalid signature: no signed assertion');
      return profile.getAssertionXml?.() ?? '';
    } catch (error) {
      failure = error;
    }
  }
  const message = failure instanceof Error ? failure.message : String(failure);
  const [, reason, text] = NODE_SAML_FAILURES.find(([pattern]) => pattern.test(message)) ?? [undefined, 'MALFORMED', 'The SAML response could not be processed.'];
  throw new SamlValidationError(reason, text, { cause: failure });
}

const emailSchema = z.email().max(EMAIL_MAX);

function resolveEmail(settings: SamlSpSettings, nameId: string, nameIdFormat: string, attributes: Record<string, string[]>): string {
  const fromAttribute = settings.emailAttribute ? attributes[settings.emailAttribute]?.[0] : undefined;
  const candidate = fromAttribute ?? (nameIdFormat === EMAIL_NAME_ID_FORMAT ? nameId : undefined);
  const parsed = emailSchema.safeParse(candidate?.trim().toLowerCase());
  if (!parsed.success) {
    const source = settings.emailAttribute ? `attribute ${settings.emailAttribute} or an e-mail NameID` : 'an e-mail NameID';
    throw new SamlValidationError('EMAIL_MISSING', `The SAML assertion carries no valid e-mail address (looked for ${source}).`);
  }
  return parsed.data;
}

/**
 * Cheap checks of a base64 SAMLResponse before anything parses it (microseconds per KiB): its length,
 * its alphabet, the decoded size, and its count of elements, attributes and nesting levels.
 */
function screenSamlResponse(samlResponseBase64: string): void {
  if (samlResponseBase64.length > SAML_RESPONSE_MAX) throw new SamlValidationError('MALFORMED', 'The SAML response is too large.');
  if (!BASE64.test(samlResponseBase64)) throw new SamlValidationError('MALFORMED', 'The SAML response is not base64.');
  const xml = Buffer.from(samlResponseBase64, 'base64').toString('utf8');
  if (Buffer.byteLength(xml) > SAML_RESPONSE_XML_MAX_BYTES) throw new SamlValidationError('MALFORMED', 'The SAML response is too large.');
  requireXmlWithinBudget(xml, XML_BUDGET);
}

/** What a response proves once its signature and content are verified; the two state checks (replay, request) remain. */
export type VerifiedSamlResponse = { login: SamlLogin; inResponseTo: string | null; rememberUntil: Date };

/**
 * Everything about a screened response that needs no state: parsing, the structural checks, node-saml's
 * signature verification, and the checks on the verified assertion. CPU only, so it can run in a
 * worker thread (saml-verifier.ts).
 */
export async function verifySamlResponse(settings: SamlSpSettings, samlResponseBase64: string): Promise<VerifiedSamlResponse> {
  const doc = parseSamlXml(Buffer.from(samlResponseBase64, 'base64').toString('utf8'));
  const response = requireResponseRoot(doc);
  refuseWeakAlgorithms(doc);
  requireSuccessStatus(response);
  const single = requireSingleAssertion(doc, response);
  if ('assertion' in single) requireSomeSignature(response, single.assertion);

  // From here on, assertion content is read only from the bytes node-saml verified (decrypted first if need be).
  const verifiedDoc = parseSamlXml(await verifyWithNodeSaml(settings, samlResponseBase64, 'encrypted' in single));
  // The signature an encrypted assertion carries was out of sight of the algorithm check above.
  if ('encrypted' in single) refuseWeakAlgorithms(verifiedDoc);
  const verifiedAssertion = verifiedDoc.documentElement;
  if (!verifiedAssertion) throw new SamlValidationError('MALFORMED', 'The signed SAML assertion is empty.');
  const now = new Date();
  requireIssuer(verifiedAssertion, settings.idpIssuer, 'assertion', true);
  requireIssuer(response, settings.idpIssuer, 'response', false);
  requireDestination(response, settings.acsUrl);
  const confirmation = requireBearerConfirmation(verifiedAssertion, settings.acsUrl, settings.clockSkewMs, now, settings.allowIdpInitiated ?? false);
  requireAgreeingResponseInResponseTo(response, confirmation.inResponseTo);
  const content = readAssertionContent(verifiedAssertion);
  const email = resolveEmail(settings, content.nameId, content.nameIdFormat, content.attributes);
  const validUntil = Math.min(confirmation.notOnOrAfter.getTime(), content.conditionsNotOnOrAfter?.getTime() ?? Infinity);

  const firstAttributeValue = (name: string | undefined) => (name ? content.attributes[name]?.[0] : undefined);
  return {
    login: {
      nameId: content.nameId,
      nameIdFormat: content.nameIdFormat,
      email,
      firstName: firstAttributeValue(settings.firstNameAttribute),
      lastName: firstAttributeValue(settings.lastNameAttribute),
      assertionId: content.assertionId,
      sessionNotOnOrAfter: content.sessionNotOnOrAfter,
      attributes: content.attributes,
      idpInitiated: confirmation.inResponseTo === null,
    },
    inResponseTo: confirmation.inResponseTo,
    rememberUntil: new Date(validUntil + settings.clockSkewMs),
  };
}

type SamlResponseVerifier = (settings: SamlSpSettings, samlResponseBase64: string) => Promise<VerifiedSamlResponse>;

/**
 * Validates a base64 SAMLResponse (HTTP-POST binding) and returns the login it carries, or throws
 * SamlValidationError. `verify` does the parsing and cryptography: in this thread by default, in a
 * worker thread when the service passes its verifier.
 */
export async function validateSamlResponse(settings: SamlSpSettings, stores: SamlStores, samlResponseBase64: string, verify: SamlResponseVerifier = verifySamlResponse): Promise<SamlLogin> {
  screenSamlResponse(samlResponseBase64);
  const { login, inResponseTo, rememberUntil } = await verify(settings, samlResponseBase64);
  if (!(await stores.replayCache.remember(login.assertionId, settings.employerId, rememberUntil))) {
    throw new SamlValidationError('REPLAYED', 'This SAML assertion has already been used; sign in again.');
  }
  if (inResponseTo !== null && !(await stores.requests.consume(inResponseTo, settings.employerId))) {
    throw new SamlValidationError('UNKNOWN_IN_RESPONSE_TO', 'The SAML response answers no outstanding sign-in request of this employer (expired, already used, or never made here); sign in again.');
  }
  return login;
}

const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';

/** A Single Logout message the IdP sent over the HTTP-Redirect binding, verified. */
export type IdpLogoutMessage = { kind: 'request'; requestId: string; nameId: string; profile: Profile } | { kind: 'response' };

/**
 * Verifies a LogoutRequest or LogoutResponse on the HTTP-Redirect binding: signed (node-saml accepts an
 * unsigned one, so the signature is required here) with RSA-SHA256 by a configured IdP certificate,
 * from the configured issuer, within its time window. Small messages (a URL's worth): verified in this thread.
 */
export async function verifyIdpLogoutRedirect(settings: SamlSpSettings, query: Record<string, string>, rawQuery: string): Promise<IdpLogoutMessage> {
  if (!query.Signature) throw new SamlValidationError('UNSIGNED', 'The SAML logout message is not signed.');
  if (query.SigAlg !== RSA_SHA256) throw new SamlValidationError('ALGORITHM_REFUSED', `The SAML logout message is signed with ${query.SigAlg ?? '(none)'}, not RSA-SHA256.`);
  try {
    const { profile } = await nodeSaml(settings).validateRedirectAsync(query, rawQuery);
    if (!query.SAMLRequest) return { kind: 'response' };
    if (!profile?.ID || !profile.nameID) throw new Error('Missing SAML LogoutRequest ID or NameID');
    return { kind: 'request', requestId: profile.ID, nameId: profile.nameID, profile };
  } catch (error) {
    if (error instanceof SamlValidationError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    const reason = /signature/i.test(message) ? 'SIGNATURE_INVALID' : /issuer/i.test(message) ? 'ISSUER_MISMATCH' : /expired/i.test(message) ? 'EXPIRED' : 'MALFORMED';
    throw new SamlValidationError(reason, `The SAML logout message was refused: ${message}.`, { cause: error });
  }
}

/** The redirect answering a verified LogoutRequest with a LogoutResponse, signed with the SP key (settings.spSigningKey). */
export async function logoutResponseRedirect(settings: SamlSpSettings, request: Profile, relayState: string): Promise<string> {
  return nodeSaml(settings).getLogoutResponseUrlAsync(request, relayState, {}, true);
}

/** The redirect to the IdP's Single Logout URL with a LogoutRequest for `nameId`, signed with the SP key. */
export async function logoutRequestRedirect(settings: SamlSpSettings, nameId: string): Promise<string> {
  const user = { issuer: settings.idpIssuer, nameID: nameId, nameIDFormat: settings.nameIdFormat ?? EMAIL_NAME_ID_FORMAT } as Profile;
  return nodeSaml(settings).getLogoutUrlAsync(user, '', {});
}
