import { inflateRawSync } from 'node:zlib';
import { DOMParser } from '@xmldom/xmldom';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  EMAIL_NAME_ID_FORMAT,
  SamlValidationError,
  createAuthnRequestRedirect,
  generateSpMetadata,
  validateSamlResponse,
} from '../../src/sso/saml.ts';
import type { AssertionReplayCache, SamlFailureReason, SamlRequestStore, SamlSpSettings, SamlStores } from '../../src/sso/saml.ts';
import { ATTACKER_EMAIL, createTestIdp } from '../support/saml-idp.ts';
import type { CraftResponseOptions, TestIdp } from '../support/saml-idp.ts';

// In-memory stand-ins for the Postgres stores, with the same contract: consume once, remember once.
function memoryRequestStore(): SamlRequestStore {
  const outstanding = new Map<string, { employerId: string; expiresAt: Date }>();
  return {
    async save(requestId, employerId, expiresAt) {
      outstanding.set(requestId, { employerId, expiresAt });
    },
    async consume(requestId, employerId) {
      const request = outstanding.get(requestId);
      if (!request || request.employerId !== employerId || request.expiresAt <= new Date()) return false;
      outstanding.delete(requestId);
      return true;
    },
  };
}

function memoryReplayCache(): AssertionReplayCache & { until: Map<string, Date> } {
  const until = new Map<string, Date>();
  return {
    until,
    async remember(assertionId, employerId, expiry) {
      const key = `${employerId}/${assertionId}`;
      if (until.has(key)) return false;
      until.set(key, expiry);
      return true;
    },
  };
}

const EMPLOYER_ID = 'emp-1';
const SP_BASE = 'https://benefits.example.test';
const EMAIL = 'Ada.Lovelace@Example.com';

let idp: TestIdp;
let otherKeyIdp: TestIdp;
let settings: SamlSpSettings;
let stores: SamlStores & { replayCache: ReturnType<typeof memoryReplayCache> };

beforeAll(async () => {
  idp = await createTestIdp();
  otherKeyIdp = await createTestIdp({ issuer: idp.issuer }); // same issuer, different key
});

beforeEach(() => {
  settings = {
    employerId: EMPLOYER_ID,
    spEntityId: `${SP_BASE}/api/auth/saml/metadata/${EMPLOYER_ID}`,
    acsUrl: `${SP_BASE}/api/auth/saml/callback/${EMPLOYER_ID}`,
    idpEntryPoint: idp.entryPoint,
    idpIssuer: idp.issuer,
    idpCertificates: [idp.certificatePem],
    emailAttribute: 'email',
    firstNameAttribute: 'firstName',
    lastNameAttribute: 'lastName',
    clockSkewMs: 60_000,
    decryptionKeys: [],
  };
  stores = { requests: memoryRequestStore(), replayCache: memoryReplayCache() };
});

async function startLogin(): Promise<string> {
  return (await createAuthnRequestRedirect(settings, stores.requests, 'relay-1')).requestId;
}

async function craft(overrides: Partial<CraftResponseOptions> = {}, signer: TestIdp = idp): Promise<string> {
  const requestId = await startLogin();
  return signer.craftResponse({ requestId, audience: settings.spEntityId, acsUrl: settings.acsUrl, email: EMAIL, ...overrides });
}

async function expectRefused(samlResponse: string, reason: SamlFailureReason): Promise<SamlValidationError> {
  const error = await validateSamlResponse(settings, stores, samlResponse).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(SamlValidationError);
  const refusal = error as SamlValidationError;
  expect(refusal.reason, refusal.message).toBe(reason);
  expect(refusal.message.length).toBeGreaterThan(10);
  return refusal;
}

const parseXml = (xml: string) => new DOMParser().parseFromString(xml, 'text/xml');

describe('AuthnRequest (HTTP-Redirect binding)', () => {
  it('redirects to the IdP with a deflated AuthnRequest whose id is outstanding in the store', async () => {
    const { redirectUrl, requestId } = await createAuthnRequestRedirect(settings, stores.requests, 'relay-42');
    const url = new URL(redirectUrl);
    expect(`${url.origin}${url.pathname}`).toBe(idp.entryPoint);
    expect(url.searchParams.get('RelayState')).toBe('relay-42');

    const xml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
    const request = parseXml(xml).documentElement;
    expect(request?.localName).toBe('AuthnRequest');
    expect(request?.getAttribute('ID')).toBe(requestId);
    expect(request?.getAttribute('AssertionConsumerServiceURL')).toBe(settings.acsUrl);
    expect(request?.getAttribute('Destination')).toBe(idp.entryPoint);
    expect(request?.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Issuer')[0]?.textContent).toBe(settings.spEntityId);
    expect(request?.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:protocol', 'NameIDPolicy')[0]?.getAttribute('Format')).toBe(EMAIL_NAME_ID_FORMAT);
    expect(request?.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:protocol', 'RequestedAuthnContext')).toHaveLength(0);

    expect(await stores.requests.consume(requestId, 'another-employer')).toBe(false);
    expect(await stores.requests.consume(requestId, EMPLOYER_ID)).toBe(true);
  });
});

describe('SP metadata', () => {
  it('names the entity id, the HTTP-POST ACS URL and the NameID format', () => {
    const metadata = parseXml(generateSpMetadata({ ...settings, nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', certificates: [], authnRequestsSigned: false, singleLogoutUrl: `${SP_BASE}/api/auth/saml/logout/${EMPLOYER_ID}` })).documentElement;
    const md = 'urn:oasis:names:tc:SAML:2.0:metadata';
    expect(metadata?.getAttribute('entityID')).toBe(settings.spEntityId);
    const acs = metadata?.getElementsByTagNameNS(md, 'AssertionConsumerService')[0];
    expect(acs?.getAttribute('Location')).toBe(settings.acsUrl);
    expect(acs?.getAttribute('Binding')).toBe('urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
    expect(metadata?.getElementsByTagNameNS(md, 'NameIDFormat')[0]?.textContent).toBe('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
  });
});

describe('accepted responses', () => {
  it('accepts a login signed by an independent IdP library and consumes its request once', async () => {
    const requestId = await startLogin();
    const login = await validateSamlResponse(
      settings,
      stores,
      await idp.createLoginResponse({
        requestId,
        audience: settings.spEntityId,
        acsUrl: settings.acsUrl,
        email: EMAIL,
        attributes: { firstName: 'Ada', lastName: 'Lovelace' },
      }),
    );
    expect(login).toMatchObject({ email: 'ada.lovelace@example.com', nameId: EMAIL, nameIdFormat: EMAIL_NAME_ID_FORMAT, firstName: 'Ada', lastName: 'Lovelace' });
    expect(login.attributes.email).toEqual([EMAIL]);
    expect(login.assertionId).toMatch(/^_/);

    // The same request cannot be answered twice, even by a fresh assertion.
    const second = await idp.createLoginResponse({ requestId, audience: settings.spEntityId, acsUrl: settings.acsUrl, email: EMAIL });
    await expectRefused(second, 'UNKNOWN_IN_RESPONSE_TO');
  });

  it('accepts an unsigned response carrying a signed assertion (Entra ID default)', async () => {
    const login = await validateSamlResponse(settings, stores, await craft({ signed: 'assertion', attributes: { firstName: 'Ada' } }));
    expect(login.email).toBe('ada.lovelace@example.com');
    expect(login.firstName).toBe('Ada');
    expect(login.lastName).toBeUndefined();
    expect(login.sessionNotOnOrAfter).toBeInstanceOf(Date);
  });

  it('accepts a response signed as a whole around an unsigned assertion', async () => {
    const login = await validateSamlResponse(settings, stores, await craft({ signed: 'response' }));
    expect(login.email).toBe('ada.lovelace@example.com');
  });

  it('accepts a bare base64 certificate among several configured ones (key rollover)', async () => {
    const bareBase64 = idp.certificatePem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
    settings.idpCertificates = [otherKeyIdp.certificatePem, bareBase64];
    const login = await validateSamlResponse(settings, stores, await craft());
    expect(login.email).toBe('ada.lovelace@example.com');
  });

  it('falls back to an e-mail NameID when the e-mail attribute is not configured', async () => {
    delete settings.emailAttribute;
    const login = await validateSamlResponse(settings, stores, await craft({ email: 'grace@example.com' }));
    expect(login.email).toBe('grace@example.com');
  });

  it('accepts an assertion that expired less than the clock skew ago', async () => {
    const now = Date.now();
    const login = await validateSamlResponse(settings, stores, await craft({ notBefore: new Date(now - 10 * 60_000), notOnOrAfter: new Date(now - 20_000) }));
    expect(login.email).toBe('ada.lovelace@example.com');
  });

  it('keeps a failed attempt from using up its request', async () => {
    const requestId = await startLogin();
    const base = { requestId, audience: settings.spEntityId, acsUrl: settings.acsUrl, email: EMAIL };
    await expectRefused(idp.craftResponse({ ...base, audience: 'https://someone-else.example' }), 'AUDIENCE_MISMATCH');
    expect((await validateSamlResponse(settings, stores, idp.craftResponse(base))).email).toBe('ada.lovelace@example.com');
  });
});

describe('refused responses', () => {
  it('refuses an unsigned response with an unsigned assertion', async () => {
    await expectRefused(await craft({ signed: 'none' }), 'UNSIGNED');
  });

  it('refuses a signature by another key, even with that key certificate in KeyInfo', async () => {
    await expectRefused(await craft({ signed: 'both' }, otherKeyIdp), 'SIGNATURE_INVALID');
    await expectRefused(await craft({ signed: 'assertion' }, otherKeyIdp), 'SIGNATURE_INVALID');
  });

  it('refuses an assertion changed after signing', async () => {
    await expectRefused(await craft({ signed: 'assertion', tamperedEmail: ATTACKER_EMAIL }), 'SIGNATURE_INVALID');
    await expectRefused(await craft({ signed: 'response', tamperedEmail: ATTACKER_EMAIL }), 'SIGNATURE_INVALID');
  });

  it('refuses another audience', async () => {
    await expectRefused(await craft({ audience: 'https://other-sp.example.test' }), 'AUDIENCE_MISMATCH');
  });

  it('refuses an expired assertion and one not yet valid', async () => {
    const now = Date.now();
    await expectRefused(await craft({ notBefore: new Date(now - 20 * 60_000), notOnOrAfter: new Date(now - 10 * 60_000) }), 'EXPIRED');
    await expectRefused(await craft({ notBefore: new Date(now + 10 * 60_000), notOnOrAfter: new Date(now + 20 * 60_000) }), 'NOT_YET_VALID');
  });

  it('refuses a response addressed to another Destination', async () => {
    await expectRefused(await craft({ destination: `${SP_BASE}/api/auth/saml/callback/emp-2` }), 'DESTINATION_MISMATCH');
    await expectRefused(await craft({ signed: 'response', destination: `${SP_BASE}/api/auth/saml/callback/emp-2` }), 'DESTINATION_MISMATCH');
  });

  it('refuses an assertion for another Recipient', async () => {
    await expectRefused(await craft({ recipient: `${SP_BASE}/api/auth/saml/callback/emp-2` }), 'RECIPIENT_MISMATCH');
  });

  it('refuses a foreign Issuer even when signed with the configured key', async () => {
    await expectRefused(await craft({ issuer: 'https://foreign-idp.example.test' }), 'ISSUER_MISMATCH');
  });

  it('refuses SHA-1 signatures and digests', async () => {
    await expectRefused(await craft({ algorithm: 'sha1' }), 'SHA1_REFUSED');
    await expectRefused(await craft({ algorithm: 'sha1', signed: 'response' }), 'SHA1_REFUSED');
  });

  it('refuses an InResponseTo that answers no outstanding request of this employer', async () => {
    await expectRefused(idp.craftResponse({ requestId: '_never-issued', audience: settings.spEntityId, acsUrl: settings.acsUrl, email: EMAIL }), 'UNKNOWN_IN_RESPONSE_TO');

    const foreignRequest = await createAuthnRequestRedirect({ ...settings, employerId: 'emp-2' }, stores.requests, 'relay');
    await expectRefused(
      idp.craftResponse({ requestId: foreignRequest.requestId, audience: settings.spEntityId, acsUrl: settings.acsUrl, email: EMAIL }),
      'UNKNOWN_IN_RESPONSE_TO',
    );
  });

  it('takes InResponseTo from the signed assertion, never from the unsigned response', async () => {
    const outstanding = await startLogin();
    // The assertion answers nothing we sent; only the unsigned Response names a real request.
    await expectRefused(await craft({ assertionInResponseTo: '_never-issued', responseInResponseTo: outstanding }), 'UNKNOWN_IN_RESPONSE_TO');
    await expectRefused(await craft({ assertionInResponseTo: null, responseInResponseTo: outstanding }), 'UNKNOWN_IN_RESPONSE_TO');
    expect(await stores.requests.consume(outstanding, EMPLOYER_ID)).toBe(true);
  });

  it('refuses a replayed response and keeps its assertion id until NotOnOrAfter plus skew', async () => {
    const notOnOrAfter = new Date(Date.now() + 4 * 60_000);
    const samlResponse = await craft({ notOnOrAfter });
    const login = await validateSamlResponse(settings, stores, samlResponse);
    expect(stores.replayCache.until.get(`${EMPLOYER_ID}/${login.assertionId}`)?.getTime()).toBe(notOnOrAfter.getTime() + settings.clockSkewMs);
    await expectRefused(samlResponse, 'REPLAYED');
  });

  it('refuses XML signature wrapping', async () => {
    await expectRefused(await craft({ signed: 'assertion', wrapping: 'injected-sibling' }), 'MULTIPLE_ASSERTIONS');
    await expectRefused(await craft({ signed: 'assertion', wrapping: 'hidden-in-extensions' }), 'MULTIPLE_ASSERTIONS');
    await expectRefused(await craft({ signed: 'response', wrapping: 'injected-sibling' }), 'MULTIPLE_ASSERTIONS');
  });

  it('refuses an IdP error status', async () => {
    await expectRefused(await craft({ statusCode: 'urn:oasis:names:tc:SAML:2.0:status:Responder' }), 'IDP_STATUS_ERROR');
  });

  it('refuses a DTD, non-XML input and a non-Response document', async () => {
    await expectRefused(await craft({ prolog: '<!DOCTYPE samlp:Response [<!ENTITY x "x">]>' }), 'MALFORMED');
    await expectRefused(Buffer.from('<samlp:Response', 'utf8').toString('base64'), 'MALFORMED');
    await expectRefused(Buffer.from('<a xmlns="urn:example"/>', 'utf8').toString('base64'), 'MALFORMED');
  });

  it('refuses a login with no usable e-mail address', async () => {
    delete settings.emailAttribute;
    await expectRefused(await craft({ nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent', email: 'opaque-id-123' }), 'EMAIL_MISSING');
  });
});
