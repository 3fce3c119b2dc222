// A real SAML identity provider for tests: its own RSA key and self-signed certificate made at test time,
// good responses built and signed by @boxyhq/saml20 (an IdP library independent of node-saml), and
// hand-built variants signed with xml-crypto directly for every way a response can be wrong.
import { randomUUID, sign } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
// The package's default export differs between Node's and Vite's CommonJS interop; this named export does not.
import { createSAMLResponse } from '@boxyhq/saml20/dist/response.js';
import { IdentityProvider, SamlLib, ServiceProvider } from 'samlify';
import { generate } from 'selfsigned';
import { SignedXml } from 'xml-crypto';

export type LoginResponseOptions = {
  /** The AuthnRequest id being answered (SubjectConfirmationData@InResponseTo and Response@InResponseTo). */
  requestId: string;
  /** The SP entity id. */
  audience: string;
  acsUrl: string;
  email: string;
  attributes?: Record<string, string>;
};

export type CraftResponseOptions = LoginResponseOptions & {
  /** Which elements carry a signature; default 'assertion' (Entra ID's default). */
  signed?: 'assertion' | 'response' | 'both' | 'none';
  /** 'sha1' signs with RSA-SHA1 and SHA-1 digests. */
  algorithm?: 'sha256' | 'sha1';
  /** Response@Destination; default acsUrl. */
  destination?: string;
  /** SubjectConfirmationData@Recipient; default acsUrl. */
  recipient?: string;
  /** Issuer of both Response and Assertion; default the IdP's. */
  issuer?: string;
  /** Response@InResponseTo; default requestId; null leaves it out. */
  responseInResponseTo?: string | null;
  /** SubjectConfirmationData@InResponseTo; default requestId; null leaves it out (IdP-initiated). */
  assertionInResponseTo?: string | null;
  notBefore?: Date;
  notOnOrAfter?: Date;
  nameIdFormat?: string;
  statusCode?: string;
  /**
   * Signature wrapping after signing: 'injected-sibling' adds an unsigned assertion for another user next to
   * the signed one; 'hidden-in-extensions' moves the signed assertion into samlp:Extensions and puts an
   * unsigned one in its place.
   */
  wrapping?: 'injected-sibling' | 'hidden-in-extensions';
  /** Replaces the e-mail after signing, leaving the signature as it was. */
  tamperedEmail?: string;
  /** Text put before the root element after signing (e.g. a DOCTYPE). */
  prolog?: string;
};

export type TestIdp = {
  issuer: string;
  entryPoint: string;
  certificatePem: string;
  /** Base64 SAMLResponse built and signed (Response and Assertion, RSA-SHA256) by @boxyhq/saml20. */
  createLoginResponse(options: LoginResponseOptions): Promise<string>;
  /** Base64 SAMLResponse built by hand and signed with xml-crypto as the options say. */
  craftResponse(options: CraftResponseOptions): string;
  /**
   * The response with its (signed) assertion encrypted by samlify, as an IdP whose policy encrypts does:
   * to the encryption certificate of the SP metadata given, AES-256 under RSA-OAEP.
   */
  encryptAssertion(samlResponseBase64: string, spMetadataXml: string): Promise<string>;
  /** The IdP's Single Logout URL (HTTP-Redirect). */
  logoutUrl: string;
  /** A LogoutRequest for `nameId`, as the query string of the HTTP-Redirect binding, signed (RSA-SHA256) unless `signed` is false. */
  logoutRequestQuery(options: { nameId: string; destination: string; signed?: boolean }): { query: string; requestId: string };
  /** A LogoutResponse (Success) answering `inResponseTo`, as a signed HTTP-Redirect query string. */
  logoutResponseQuery(options: { inResponseTo: string; destination: string }): string;
};

export const ATTACKER_EMAIL = 'attacker@evil.example';
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ALGORITHMS = {
  sha256: { signature: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', digest: 'http://www.w3.org/2001/04/xmlenc#sha256' },
  sha1: { signature: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1', digest: 'http://www.w3.org/2000/09/xmldsig#sha1' },
} as const;
const RESPONSE_XPATH = "/*[local-name(.)='Response']";
const ASSERTION_XPATH = `${RESPONSE_XPATH}/*[local-name(.)='Assertion']`;

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const attribute = (name: string, value: string | null | undefined) => (value == null ? '' : ` ${name}="${escapeXml(value)}"`);
const xmlId = () => `_${randomUUID()}`;

function assertionXml(options: CraftResponseOptions, issuer: string, email: string, id: string): string {
  const now = new Date();
  const notBefore = (options.notBefore ?? new Date(now.getTime() - 60_000)).toISOString();
  const notOnOrAfter = (options.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000)).toISOString();
  const attributes = Object.entries({ email, ...options.attributes })
    .map(([name, value]) => `<saml:Attribute Name="${escapeXml(name)}"><saml:AttributeValue>${escapeXml(value)}</saml:AttributeValue></saml:Attribute>`)
    .join('');
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${now.toISOString()}">` +
    `<saml:Issuer>${escapeXml(issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${escapeXml(options.nameIdFormat ?? EMAIL_FORMAT)}">${escapeXml(email)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData` +
    `${attribute('InResponseTo', options.assertionInResponseTo === undefined ? options.requestId : options.assertionInResponseTo)}` +
    `${attribute('NotOnOrAfter', notOnOrAfter)}${attribute('Recipient', options.recipient ?? options.acsUrl)}/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}"><saml:AudienceRestriction><saml:Audience>${escapeXml(options.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="${id}" SessionNotOnOrAfter="${new Date(now.getTime() + 8 * 3600_000).toISOString()}">` +
    `<saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` +
    `</saml:Assertion>`
  );
}

function responseXml(options: CraftResponseOptions, issuer: string, assertion: string): string {
  return (
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"` +
    ` ID="${xmlId()}" Version="2.0" IssueInstant="${new Date().toISOString()}"` +
    `${attribute('Destination', options.destination ?? options.acsUrl)}` +
    `${attribute('InResponseTo', options.responseInResponseTo === undefined ? options.requestId : options.responseInResponseTo)}>` +
    `<saml:Issuer>${escapeXml(issuer)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="${escapeXml(options.statusCode ?? SUCCESS)}"/></samlp:Status>` +
    `${assertion}</samlp:Response>`
  );
}

/** Enveloped signature placed after the element's Issuer, as IdPs do; KeyInfo carries the signer's certificate. */
function signElement(xml: string, xpath: string, key: { privateKeyPem: string; certificatePem: string }, algorithm: 'sha256' | 'sha1'): string {
  const signer = new SignedXml({
    privateKey: key.privateKeyPem,
    publicCert: key.certificatePem,
    signatureAlgorithm: ALGORITHMS[algorithm].signature,
    canonicalizationAlgorithm: EXC_C14N,
    getKeyInfoContent: SignedXml.getKeyInfoContent,
  });
  signer.addReference({
    xpath,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', EXC_C14N],
    digestAlgorithm: ALGORITHMS[algorithm].digest,
  });
  signer.computeSignature(xml, { prefix: 'ds', location: { reference: `${xpath}/*[local-name(.)='Issuer']`, action: 'after' } });
  return signer.getSignedXml();
}

function wrap(signedXml: string, wrapping: NonNullable<CraftResponseOptions['wrapping']>, forged: string): string {
  const start = signedXml.indexOf('<saml:Assertion');
  const end = signedXml.indexOf('</saml:Assertion>') + '</saml:Assertion>'.length;
  const signedAssertion = signedXml.slice(start, end);
  if (wrapping === 'injected-sibling') return signedXml.slice(0, start) + forged + signedXml.slice(start);
  const withForged = signedXml.slice(0, start) + forged + signedXml.slice(end);
  return withForged.replace('</saml:Issuer>', `</saml:Issuer><samlp:Extensions>${signedAssertion}</samlp:Extensions>`);
}

/** `<param>=<deflated, base64, URL-encoded xml>` and the RSA-SHA256 SigAlg, as the HTTP-Redirect binding sends a message. */
const redirectQuery = (param: 'SAMLRequest' | 'SAMLResponse', xml: string) =>
  `${param}=${encodeURIComponent(deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64'))}&SigAlg=${encodeURIComponent(ALGORITHMS.sha256.signature)}`;
/** The binding's signature over the query string as sent (SAML bindings 3.4.4.1). */
const signRedirectQuery = (query: string, privateKeyPem: string) => `${query}&Signature=${encodeURIComponent(sign('sha256', Buffer.from(query), privateKeyPem).toString('base64'))}`;

export async function createTestIdp(options: { issuer?: string } = {}): Promise<TestIdp> {
  const issuer = options.issuer ?? `https://idp.example.test/${randomUUID()}`;
  const pems = await generate([{ name: 'commonName', value: 'saml-test-idp' }], { keySize: 2048, algorithm: 'sha256' });
  const key = { privateKeyPem: pems.private, certificatePem: pems.cert };

  return {
    issuer,
    entryPoint: `${issuer}/sso/saml`,
    certificatePem: pems.cert,

    async createLoginResponse({ requestId, audience, acsUrl, email, attributes }) {
      const xml = await createSAMLResponse({
        issuer,
        audience,
        acsUrl,
        requestId,
        claims: { email, raw: { email, ...attributes } },
        privateKey: key.privateKeyPem,
        publicKey: key.certificatePem,
      });
      return Buffer.from(xml, 'utf8').toString('base64');
    },

    craftResponse(craft) {
      const messageIssuer = craft.issuer ?? issuer;
      const algorithm = craft.algorithm ?? 'sha256';
      const signed = craft.signed ?? 'assertion';
      let xml = responseXml(craft, messageIssuer, assertionXml(craft, messageIssuer, craft.email, xmlId()));
      if (signed === 'assertion' || signed === 'both') xml = signElement(xml, ASSERTION_XPATH, key, algorithm);
      if (signed === 'response' || signed === 'both') xml = signElement(xml, RESPONSE_XPATH, key, algorithm);
      if (craft.wrapping) xml = wrap(xml, craft.wrapping, assertionXml(craft, messageIssuer, ATTACKER_EMAIL, xmlId()));
      if (craft.tamperedEmail) xml = xml.replaceAll(escapeXml(craft.email), escapeXml(craft.tamperedEmail));
      return Buffer.from((craft.prolog ?? '') + xml, 'utf8').toString('base64');
    },

    logoutUrl: `${issuer}/slo`,

    logoutRequestQuery({ nameId, destination, signed = true }) {
      const requestId = xmlId();
      const now = new Date();
      const xml =
        `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${requestId}" Version="2.0"` +
        ` IssueInstant="${now.toISOString()}" NotOnOrAfter="${new Date(now.getTime() + 5 * 60_000).toISOString()}" Destination="${escapeXml(destination)}">` +
        `<saml:Issuer>${escapeXml(issuer)}</saml:Issuer><saml:NameID Format="${EMAIL_FORMAT}">${escapeXml(nameId)}</saml:NameID></samlp:LogoutRequest>`;
      const query = redirectQuery('SAMLRequest', xml);
      return { query: signed ? signRedirectQuery(query, key.privateKeyPem) : query, requestId };
    },

    logoutResponseQuery({ inResponseTo, destination }) {
      const xml =
        `<samlp:LogoutResponse xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${xmlId()}" Version="2.0"` +
        ` IssueInstant="${new Date().toISOString()}" Destination="${escapeXml(destination)}" InResponseTo="${escapeXml(inResponseTo)}">` +
        `<saml:Issuer>${escapeXml(issuer)}</saml:Issuer><samlp:Status><samlp:StatusCode Value="${SUCCESS}"/></samlp:Status></samlp:LogoutResponse>`;
      return signRedirectQuery(redirectQuery('SAMLResponse', xml), key.privateKeyPem);
    },

    async encryptAssertion(samlResponseBase64, spMetadataXml) {
      const encryptingIdp = IdentityProvider({ entityID: issuer, isAssertionEncrypted: true, signingCert: key.certificatePem, singleSignOnService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${issuer}/sso/saml` }], singleLogoutService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${issuer}/slo` }] });
      return SamlLib.encryptAssertion(encryptingIdp, ServiceProvider({ metadata: spMetadataXml }), Buffer.from(samlResponseBase64, 'base64').toString('utf8'));
    },
  };
}
