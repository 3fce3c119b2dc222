import { X509Certificate } from 'node:crypto';
import { generate } from 'selfsigned';
import { beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/event-store/decider.ts';
import { parseIdpMetadata } from '../../src/sso/idp-metadata.ts';

const ISSUER = 'https://sts.example.test/tenant-1/';
const ENTRY = 'https://login.example.test/tenant-1/saml2';
let current: string;
let expired: string;
let encryption: string;

const base64Of = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
const keyDescriptor = (pem: string, use?: string) =>
  `<KeyDescriptor${use ? ` use="${use}"` : ''}><KeyInfo xmlns="http://www.w3.org/2000/09/xmldsig#"><X509Data><X509Certificate>${base64Of(pem)}</X509Certificate></X509Data></KeyInfo></KeyDescriptor>`;
// Entra ID's shape: default namespace, several role descriptors, unprefixed KeyInfo.
const entity = (keys: string, entityId = ISSUER) =>
  `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entityId}">` +
  `<RoleDescriptor xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="fed:SecurityTokenServiceType" protocolSupportEnumeration="http://docs.oasis-open.org/wsfed/federation/200706"/>` +
  `<IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">${keys}` +
  `<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${ENTRY}"/></IDPSSODescriptor></EntityDescriptor>`;

const refusal = (xml: string) => {
  try {
    parseIdpMetadata(xml, new Date());
  } catch (error) {
    return error;
  }
  return null;
};

beforeAll(async () => {
  const now = Date.now();
  const make = (name: string, notAfterDate?: Date) =>
    generate([{ name: 'commonName', value: name }], { keySize: 2048, algorithm: 'sha256', ...(notAfterDate ? { notBeforeDate: new Date(now - 3 * 86_400_000), notAfterDate } : {}) });
  [current, expired, encryption] = await Promise.all([make('current'), make('expired', new Date(now - 86_400_000)), make('encryption')]).then((all) => all.map((pems) => pems.cert));
});

describe('parseIdpMetadata', () => {
  it('reads issuer, HTTP-Redirect entry point and signing certificates, skipping expired and encryption keys', () => {
    const metadata = parseIdpMetadata(entity(keyDescriptor(expired, 'signing') + keyDescriptor(current) + keyDescriptor(encryption, 'encryption')), new Date());
    expect(metadata.issuer).toBe(ISSUER);
    expect(metadata.entryPoint).toBe(ENTRY);
    expect(metadata.certificates.map((pem) => new X509Certificate(pem).fingerprint256)).toEqual([new X509Certificate(current).fingerprint256]);
  });

  it('reads the one IdP inside an EntitiesDescriptor', () => {
    const xml = `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">${entity(keyDescriptor(current))}</EntitiesDescriptor>`;
    expect(parseIdpMetadata(xml, new Date()).issuer).toBe(ISSUER);
  });

  it.each([
    ['a DTD', () => `<!DOCTYPE x [<!ENTITY e "e">]>${entity(keyDescriptor(current))}`, /DTD/],
    ['two IdPs', () => `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">${entity(keyDescriptor(current))}${entity(keyDescriptor(current), 'https://b.example/')}</EntitiesDescriptor>`, /exactly one IdP, found 2/],
    ['only an expired certificate', () => entity(keyDescriptor(expired)), /no valid/],
    ['no entityID', () => entity(keyDescriptor(current), ''), /entityID/],
  ])('refuses metadata with %s', (_name, xml, message) => {
    const error = refusal(xml());
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ status: 400, code: 'SAML_METADATA_INVALID', message: expect.stringMatching(message) });
  });
});
