// The body of POST /api/employer/sso, validated field by field at the boundary: https URLs, X.509
// certificates that parse and have not expired (normalised to PEM), SAML NameID format URNs and
// non-empty attribute names. `null` clears an optional field; an absent field keeps its value.
import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import { SAML_ATTRIBUTE_MAX, SAML_CERTIFICATE_MAX, SAML_ISSUER_MAX, URL_MAX } from '../http/limits.ts';

const httpsUrl = z.url({ protocol: /^https$/, error: 'must be an https URL' }).max(URL_MAX);
const nonEmptyText = (max: number) => z.string().trim().min(1, 'must not be empty').max(max);
const NAME_ID_FORMAT = /^urn:oasis:names:tc:SAML:(1\.1|2\.0):nameid-format:[A-Za-z0-9]+$/;

export type CertificateInfo = { subject: string; fingerprintSha256: string; validTo: string };

/** Splits PEM text (one or more CERTIFICATE blocks) or one bare base64 DER certificate into certificates. */
function readCertificates(text: string): X509Certificate[] {
  const pemBlocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (pemBlocks) return pemBlocks.map((block) => new X509Certificate(block));
  const base64 = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) throw new Error('not PEM or base64');
  return [new X509Certificate(Buffer.from(base64, 'base64'))];
}

/**
 * The PEM certificates in `text`, or an error message fit for the caller: each must parse as X.509 and
 * not be expired at `now`.
 */
export function parseCertificates(text: string, now: Date): { pems: string[] } | { error: string } {
  let certificates: X509Certificate[];
  try {
    certificates = readCertificates(text);
  } catch {
    return { error: 'must be a PEM or base64 X.509 certificate' };
  }
  const expired = certificates.find((certificate) => certificate.validToDate.getTime() <= now.getTime());
  if (expired) return { error: `certificate ${expired.subject.replace(/\n/g, ', ')} expired on ${expired.validToDate.toISOString()}` };
  return { pems: certificates.map((certificate) => certificate.toString().trim()) };
}

export function describeCertificate(pem: string): CertificateInfo {
  const certificate = new X509Certificate(pem);
  return {
    subject: certificate.subject.replace(/\n/g, ', '),
    fingerprintSha256: certificate.fingerprint256,
    validTo: certificate.validToDate.toISOString(),
  };
}

const certificateField = z.string().max(SAML_CERTIFICATE_MAX).transform((text, ctx) => {
  const parsed = parseCertificates(text, new Date());
  if ('error' in parsed) {
    ctx.addIssue({ code: 'custom', message: parsed.error });
    return z.NEVER;
  }
  return parsed.pems;
});

export const ssoConfigurationUpdateSchema = z
  .object({
    samlEnabled: z.boolean(),
    samlMetadataUrl: httpsUrl.nullable().meta({ description: 'IdP metadata (fetched now) that fills samlEntryPoint, samlCertificate and samlIssuer; fields sent alongside win.' }),
    samlEntryPoint: httpsUrl.nullable().meta({ description: 'IdP single sign-on URL (HTTP-Redirect binding).' }),
    samlCertificate: certificateField.nullable().meta({ description: 'IdP signing certificate(s): PEM (several blocks during a rollover) or bare base64.' }),
    samlIssuer: nonEmptyText(SAML_ISSUER_MAX).nullable().meta({ description: 'IdP entity id, the Issuer of its responses.' }),
    samlNameIdFormat: z.string().max(SAML_ATTRIBUTE_MAX).regex(NAME_ID_FORMAT, 'must be a SAML NameID format URN such as urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress').nullable(),
    samlEmailAttribute: nonEmptyText(SAML_ATTRIBUTE_MAX).nullable().meta({ description: 'Attribute carrying the e-mail; unset: the NameID in emailAddress format.' }),
    samlFirstNameAttribute: nonEmptyText(SAML_ATTRIBUTE_MAX).nullable(),
    samlLastNameAttribute: nonEmptyText(SAML_ATTRIBUTE_MAX).nullable(),
    samlLogoutUrl: httpsUrl.nullable().meta({ description: "The IdP's Single Logout URL (HTTP-Redirect binding); read from samlMetadataUrl when it lists one." }),
    samlSignAuthnRequests: z.boolean().meta({ description: "AuthnRequests signed (RSA-SHA256) with the service's SP key, published in the SP metadata (AuthnRequestsSigned)." }),
    samlIdpInitiatedLogin: z.boolean().meta({ description: 'Accept IdP-initiated (unsolicited) SAML responses: audience, recipient, time and one-time use checked as for SP-initiated ones; they land on the console or an allowed RelayState. Off by default; a SAML trust setting.' }),
    scimEnabled: z.boolean().meta({ description: 'true the first time returns scimBearerToken once; false revokes the token.' }),
    rotateScimToken: z.boolean().meta({ description: 'true returns a new scimBearerToken once; the previous one stops working at once.' }),
  })
  .partial()
  .strict()
  .meta({ id: 'SsoConfigurationUpdate', description: 'A partial update: absent fields keep their values, null clears an optional field.' });

export type SsoConfigurationUpdate = z.infer<typeof ssoConfigurationUpdateSchema>;
