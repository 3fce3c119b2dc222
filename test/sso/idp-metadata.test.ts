import { X509Certificate } from 'node:crypto';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/event-store/decider.ts';
import { fetchIdpMetadata, parseIdpMetadata } from '../../src/sso/idp-metadata.ts';
import { TARGET_NOT_ALLOWED } from '../../src/net/safe-target.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';

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
    expect(error).toMatchObject({ kind: 'invalid', code: 'SAML_METADATA_INVALID', message: expect.stringMatching(message) });
  });
});

describe('fetchIdpMetadata', () => {
  let receiver: HttpsReceiver;
  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    receiver.respondWith(() => ({ status: 200, body: entity(keyDescriptor(current)) }));
  });
  afterAll(async () => receiver?.close());

  it('fetches over HTTPS from a trusted host', async () => {
    const metadata = await fetchIdpMetadata(`${receiver.url}/metadata`, { allowPrivateNetworks: true, ca: receiver.ca });
    expect(metadata).toMatchObject({ issuer: ISSUER, entryPoint: ENTRY });
  });

  it.each([
    ['a loopback address', () => `${receiver.url}/metadata`, /not allowed/],
    ['a private address', () => 'https://10.1.2.3/metadata', /not allowed/],
    ['the cloud metadata address', () => 'https://169.254.169.254/latest/meta-data', /not allowed/],
    ['plain http', () => 'http://idp.example.test/metadata', /https/],
  ])('refuses %s without sending a request (SSRF)', async (_name, url, message) => {
    const before = receiver.requests.length;
    const error = await fetchIdpMetadata(url(), { allowPrivateNetworks: false, ca: receiver.ca }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ kind: 'invalid', code: 'SAML_METADATA_UNREACHABLE', message: expect.stringMatching(message) });
    expect(receiver.requests.length).toBe(before);
  });

  it('answers a name resolving to a private address, a name that does not resolve and a literal private IP with the same text', async () => {
    const urls = ['https://localhost/metadata', 'https://no-such-host.invalid/metadata', 'https://10.0.0.1/metadata'];
    const errors = await Promise.all(urls.map((url) => fetchIdpMetadata(url, { allowPrivateNetworks: false }).catch((thrown: unknown) => thrown)));
    for (const error of errors) expect(error).toMatchObject({ kind: 'invalid', code: 'SAML_METADATA_UNREACHABLE', message: `samlMetadataUrl: ${TARGET_NOT_ALLOWED}` });
  });

  it('refuses a host whose certificate it does not trust', async () => {
    const error = await fetchIdpMetadata(`${receiver.url}/metadata`, { allowPrivateNetworks: true }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ kind: 'invalid', code: 'SAML_METADATA_UNREACHABLE', message: expect.stringContaining('could not be fetched') });
  });
});
