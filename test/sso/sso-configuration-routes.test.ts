import { X509Certificate } from 'node:crypto';
import { generate } from 'selfsigned';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { sha256Hex } from '../../src/crypto/tokens.ts';
import { createSsoCapability } from '../../src/sso/capability.ts';
import { ssoConfigurationStream } from '../../src/sso/sso-configuration.ts';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, getSso, postSso } from './sso-test-kit.ts';

let service: TestService;
let idp: TestIdp;
// Serves IdP metadata over HTTPS on 127.0.0.1: the service trusts its certificate and allows private
// addresses (the refusal of those is tested in idp-metadata.test.ts).
let receiver: HttpsReceiver;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  service = await startTestService({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    capabilities: capabilities.map((capability) => (capability.name === 'sso' ? createSsoCapability({ idpMetadataCa: receiver.ca }) : capability)),
  });
  idp = await createTestIdp();
});
afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

const bareBase64 = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');

describe('GET /api/employer/sso', () => {
  it('starts from defaults and names everything the IdP administrator needs', async () => {
    const tenant = await service.createTenant();
    const { status, body } = await getSso(service, tenant);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      samlEnabled: false,
      samlEntryPoint: null,
      samlCertificate: null,
      samlCertificates: [],
      samlIssuer: null,
      scimEnabled: false,
      scimTokenExists: false,
      scimTokenRotatedAt: null,
      spEntityId: `${service.url}/api/auth/saml/metadata/${tenant.employerId}`,
      acsUrl: `${service.url}/api/auth/saml/callback/${tenant.employerId}`,
      spMetadataUrl: `${service.url}/api/auth/saml/metadata/${tenant.employerId}`,
      spNameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      scimBaseUrl: `${service.url}/api/scim/v2`,
    });
    expect(body).not.toHaveProperty('scimBearerToken');
  });

  it('is for EMPLOYER_ADMIN sessions and keys with sso:manage only', async () => {
    const tenant = await service.createTenant();
    expect((await fetch(`${service.url}/api/employer/sso`)).status).toBe(401);

    const { userId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
      employerId: tenant.employerId,
      role: 'PATIENT',
      profile: { email: `patient-${tenant.employerId}@acme.test`, userName: 'patient', givenName: null, familyName: null, displayName: null, externalId: null },
      active: true,
      source: 'cli',
    });
    const patientCookie = await service.signIn(tenant.employerId, userId);
    const asPatient = await getSso(service, { cookie: patientCookie });
    expect(asPatient.status).toBe(403);
    expect((await postSso(service, { cookie: patientCookie }, { scimEnabled: true })).status).toBe(403);

    const ssoKey = await createApiKey(service, tenant, { scopes: ['sso:manage'] });
    const withKey = await fetch(`${service.url}/api/employer/sso`, { headers: keyHeaders(ssoKey.rawKey) });
    expect(withKey.status).toBe(200);
    expect(await withKey.json()).toMatchObject({ acsUrl: `${service.url}/api/auth/saml/callback/${tenant.employerId}` });

    const otherKey = await createApiKey(service, tenant, { scopes: ['webhook:manage'] });
    const refused = await fetch(`${service.url}/api/employer/sso`, { headers: keyHeaders(otherKey.rawKey) });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'INSUFFICIENT_SCOPE', requiredScopes: ['sso:manage'] });
  });
});

describe('POST /api/employer/sso: validation of each field', () => {
  let expiredPem: string;
  beforeAll(async () => {
    const now = Date.now();
    expiredPem = (await generate([{ name: 'commonName', value: 'expired-idp' }], {
      keySize: 2048,
      algorithm: 'sha256',
      notBeforeDate: new Date(now - 3 * 86_400_000),
      notAfterDate: new Date(now - 86_400_000),
    })).cert;
  });

  const invalid: Array<[string, () => Record<string, unknown>, RegExp]> = [
    ['samlEntryPoint over http', () => ({ samlEntryPoint: 'http://idp.example.test/sso' }), /https/],
    ['samlEntryPoint not a URL', () => ({ samlEntryPoint: 'idp.example.test/sso' }), /https/],
    ['samlCertificate that does not parse', () => ({ samlCertificate: '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----' }), /X\.509/],
    ['samlCertificate of random text', () => ({ samlCertificate: 'hello world' }), /X\.509/],
    ['samlCertificate that has expired', () => ({ samlCertificate: expiredPem }), /expired/],
    ['samlIssuer empty', () => ({ samlIssuer: '   ' }), /empty/],
    ['samlNameIdFormat not a URN', () => ({ samlNameIdFormat: 'email' }), /URN/],
    ['samlEmailAttribute empty', () => ({ samlEmailAttribute: '' }), /empty/],
    ['samlFirstNameAttribute empty', () => ({ samlFirstNameAttribute: ' ' }), /empty/],
    ['samlLastNameAttribute empty', () => ({ samlLastNameAttribute: '' }), /empty/],
    ['samlLastNameAttribute not a string', () => ({ samlLastNameAttribute: 42 }), /string/],
    ['samlMetadataUrl over http', () => ({ samlMetadataUrl: 'http://idp.example.test/metadata' }), /https/],
    ['samlEnabled not a boolean', () => ({ samlEnabled: 'yes' }), /boolean/],
    ['scimEnabled not a boolean', () => ({ scimEnabled: 1 }), /boolean/],
    ['an unknown field', () => ({ samlEntrypoint: 'https://idp.example.test/sso' }), /samlEntrypoint/],
  ];

  it.each(invalid)('refuses %s with 400 VALIDATION_ERROR naming the field', async (_name, body, message) => {
    const tenant = await service.createTenant();
    const { status, body: error } = await postSso(service, tenant, body());
    expect(status).toBe(400);
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.message).toMatch(message);
    const field = Object.keys(body())[0]!;
    expect(JSON.stringify(error.errors)).toContain(field === 'samlEntrypoint' ? 'body' : `body.${field}`);
    expect((await getSso(service, tenant)).body.updatedAt).toBeNull(); // nothing was saved
  });

  it('accepts a bare base64 certificate and several PEM blocks (rollover), shown back as PEM with fingerprints', async () => {
    const tenant = await service.createTenant();
    const other = await createTestIdp();
    expect((await postSso(service, tenant, { samlCertificate: bareBase64(idp.certificatePem) })).status).toBe(200);
    const single = (await getSso(service, tenant)).body;
    expect(single.samlCertificate).toBe(new X509Certificate(idp.certificatePem).toString().trim());

    const { status, body } = await postSso(service, tenant, { samlCertificate: `${idp.certificatePem}\n${other.certificatePem}` });
    expect(status).toBe(200);
    expect(body.samlCertificates).toEqual([
      expect.objectContaining({ fingerprintSha256: new X509Certificate(idp.certificatePem).fingerprint256 }),
      expect.objectContaining({ fingerprintSha256: new X509Certificate(other.certificatePem).fingerprint256 }),
    ]);
  });

  it('keeps fields a partial update does not carry, and clears a field sent as null', async () => {
    const tenant = await service.createTenant();
    await postSso(service, tenant, { samlEntryPoint: idp.entryPoint, samlEmailAttribute: 'mail' });
    const { body } = await postSso(service, tenant, { samlIssuer: idp.issuer, samlNameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' });
    expect(body).toMatchObject({ samlEntryPoint: idp.entryPoint, samlEmailAttribute: 'mail', samlIssuer: idp.issuer, spNameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' });
    const cleared = await postSso(service, tenant, { samlEmailAttribute: null });
    expect(cleared.body).toMatchObject({ samlEntryPoint: idp.entryPoint, samlEmailAttribute: null });
  });
});

describe('samlEnabled: true needs entry point, certificate and issuer', () => {
  const complete = () => ({ samlEntryPoint: idp.entryPoint, samlCertificate: idp.certificatePem, samlIssuer: idp.issuer });

  it.each(['samlEntryPoint', 'samlCertificate', 'samlIssuer'] as const)('is refused without %s', async (missingField) => {
    const tenant = await service.createTenant();
    const { [missingField]: _left, ...rest } = complete();
    const { status, body } = await postSso(service, tenant, { ...rest, samlEnabled: true });
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'SAML_CONFIGURATION_INCOMPLETE', missing: [missingField] });
    expect((await getSso(service, tenant)).body).toMatchObject({ samlEnabled: false, samlEntryPoint: null });
  });

  it('is accepted with all three in the same request, and clearing one of them later is refused', async () => {
    const tenant = await service.createTenant();
    expect((await postSso(service, tenant, { ...complete(), samlEnabled: true })).body).toMatchObject({ samlEnabled: true, samlIssuer: idp.issuer });
    const { status, body } = await postSso(service, tenant, { samlIssuer: null });
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'SAML_CONFIGURATION_INCOMPLETE', missing: ['samlIssuer'] });
  });
});

describe('SCIM bearer token', () => {
  it('is returned once when SCIM is first enabled and works for that employer only', async () => {
    const tenant = await service.createTenant();
    const enabled = await postSso(service, tenant, { scimEnabled: true });
    expect(enabled.status).toBe(200);
    const token = String(enabled.body.scimBearerToken);
    expect(token).toMatch(/^scim_[A-Za-z0-9_-]{43}$/);
    expect(enabled.headers.get('cache-control')).toBe('no-store');
    expect(enabled.body).toMatchObject({ scimEnabled: true, scimTokenExists: true, scimTokenRotatedAt: expect.any(String) });
    expect(await service.ctx.auth.scimTokens.ownerOf(token)).toEqual({ employerId: tenant.employerId, tokenId: expect.any(String) });

    const again = await postSso(service, tenant, { scimEnabled: true, samlEmailAttribute: 'email' });
    expect(again.status).toBe(200);
    expect(again.body).not.toHaveProperty('scimBearerToken');
    expect(await service.ctx.auth.scimTokens.ownerOf(token)).not.toBeNull();

    const read = await fetch(`${service.url}/api/employer/sso`, { headers: { cookie: tenant.cookie } });
    const text = await read.text();
    expect(text).not.toContain(token);
    expect(text).not.toContain(sha256Hex(token));
    expect(JSON.parse(text)).toMatchObject({ scimTokenExists: true });
  });

  it('is replaced on rotation: the new one works, the old one for the default overlap of 1 h until it is ended', async () => {
    const tenant = await service.createTenant();
    const first = String((await postSso(service, tenant, { scimEnabled: true })).body.scimBearerToken);
    const rotatedAtBefore = (await getSso(service, tenant)).body.scimTokenRotatedAt as string;
    const rotated = await postSso(service, tenant, { rotateScimToken: true });
    const second = String(rotated.body.scimBearerToken);
    expect(second).toMatch(/^scim_/);
    expect(second).not.toBe(first);
    expect(await service.ctx.auth.scimTokens.ownerOf(second)).toMatchObject({ employerId: tenant.employerId });
    expect(await service.ctx.auth.scimTokens.ownerOf(first)).toMatchObject({ employerId: tenant.employerId });
    expect(Date.parse(rotated.body.scimTokenRotatedAt as string)).toBeGreaterThanOrEqual(Date.parse(rotatedAtBefore));
    const status = await fetch(`${service.url}/api/employer/sso/scim-token`, { headers: service.sessionHeaders(tenant.cookie) });
    expect(Date.parse(((await status.json()) as { previousTokenValidUntil: string }).previousTokenValidUntil) - Date.now()).toBeGreaterThan(3500_000);
    await fetch(`${service.url}/api/employer/sso/scim-token/end-overlap`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    expect(await service.ctx.auth.scimTokens.ownerOf(first)).toBeNull();
    expect(await service.ctx.auth.scimTokens.ownerOf(second)).toMatchObject({ employerId: tenant.employerId });
  });

  it('stops working when SCIM is disabled; enabling again issues a new one', async () => {
    const tenant = await service.createTenant();
    const first = String((await postSso(service, tenant, { scimEnabled: true })).body.scimBearerToken);
    const disabled = await postSso(service, tenant, { scimEnabled: false });
    expect(disabled.body).toMatchObject({ scimEnabled: false, scimTokenExists: false, scimTokenRotatedAt: null });
    expect(await service.ctx.auth.scimTokens.ownerOf(first)).toBeNull();

    const refused = await postSso(service, tenant, { rotateScimToken: true });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'SCIM_NOT_ENABLED' });

    const second = String((await postSso(service, tenant, { scimEnabled: true })).body.scimBearerToken);
    expect(second).not.toBe(first);
    expect(await service.ctx.auth.scimTokens.ownerOf(second)).toMatchObject({ employerId: tenant.employerId });
    expect(await service.ctx.auth.scimTokens.ownerOf(first)).toBeNull();
  });

  it('is unknown when malformed or made up', async () => {
    expect(await service.ctx.auth.scimTokens.ownerOf('')).toBeNull();
    expect(await service.ctx.auth.scimTokens.ownerOf('Bearer scim_x')).toBeNull();
    expect(await service.ctx.auth.scimTokens.ownerOf(`scim_${'A'.repeat(43)}`)).toBeNull();
  });

  it('is recorded as its hash only, in the event and the read model; the audit record carries no secret', async () => {
    const tenant = await service.createTenant();
    const token = String((await postSso(service, tenant, { scimEnabled: true, samlCertificate: idp.certificatePem })).body.scimBearerToken);
    const events = await service.ctx.eventStore.readStream(ssoConfigurationStream(tenant.employerId));
    const recorded = JSON.stringify(events.map((event) => event.data));
    expect(recorded).not.toContain(token);
    expect(recorded).toContain(sha256Hex(token));
    const stored = await service.ctx.db.slonik.one(sql.type(z.object({ row: z.string() }))`
      SELECT row_to_json(c)::text AS row FROM sso_configurations c WHERE employer_id = ${tenant.employerId}`);
    expect(stored.row).not.toContain(token);

    const audit = await service.ctx.db.slonik.any(sql.type(z.object({ action: z.string(), details: z.record(z.string(), z.unknown()) }))`
      SELECT action, details FROM audit_log WHERE employer_id = ${tenant.employerId} AND action = 'sso.config.update'`);
    expect(audit).toEqual([{ action: 'sso.config.update', details: { fields: ['samlCertificates', 'scimEnabled'], trustFields: ['samlCertificates'], scimTokenIssued: true, scimTokenRevoked: false } }]);
    expect(JSON.stringify(audit)).not.toContain(sha256Hex(token));
    expect(JSON.stringify(audit)).not.toContain('BEGIN CERTIFICATE');
  });

  it('records no event for a POST that changes nothing', async () => {
    const tenant = await service.createTenant();
    await postSso(service, tenant, { samlIssuer: idp.issuer });
    // The first save also issued the employer's SP key pair (SamlSpKeyIssued).
    expect((await service.ctx.eventStore.readStream(ssoConfigurationStream(tenant.employerId))).map((event) => event.type)).toEqual(['SsoConfigurationUpdated', 'SamlSpKeyIssued']);
    await postSso(service, tenant, { samlIssuer: idp.issuer, scimEnabled: false });
    expect(await service.ctx.eventStore.readStream(ssoConfigurationStream(tenant.employerId))).toHaveLength(2);
  });
});

describe('tenant isolation', () => {
  it('keeps each employer\'s configuration and token to itself', async () => {
    const a = await service.createTenant();
    const b = await service.createTenant();
    await enableSaml(service, a, idp);
    const tokenA = String((await postSso(service, a, { scimEnabled: true })).body.scimBearerToken);
    const tokenB = String((await postSso(service, b, { scimEnabled: true })).body.scimBearerToken);

    expect((await getSso(service, b)).body).toMatchObject({ samlEnabled: false, samlIssuer: null, acsUrl: `${service.url}/api/auth/saml/callback/${b.employerId}` });
    expect(await service.ctx.auth.scimTokens.ownerOf(tokenA)).toMatchObject({ employerId: a.employerId });
    expect(await service.ctx.auth.scimTokens.ownerOf(tokenB)).toMatchObject({ employerId: b.employerId });

    await postSso(service, b, { rotateScimToken: true });
    await fetch(`${service.url}/api/employer/sso/scim-token/end-overlap`, { method: 'POST', headers: service.sessionHeaders(b.cookie) });
    expect(await service.ctx.auth.scimTokens.ownerOf(tokenA)).toMatchObject({ employerId: a.employerId });
    expect(await service.ctx.auth.scimTokens.ownerOf(tokenB)).toBeNull();
  });
});

describe('samlMetadataUrl', () => {
  const metadataXml = (options: { entryPoint?: string; certificates?: string[]; issuer?: string } = {}) =>
    `<?xml version="1.0"?><md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${options.issuer ?? idp.issuer}">` +
    `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">` +
    (options.certificates ?? [idp.certificatePem])
      .map((pem) => `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${bareBase64(pem)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`)
      .join('') +
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://idp.example.test/post"/>` +
    `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${options.entryPoint ?? idp.entryPoint}"/>` +
    `</md:IDPSSODescriptor></md:EntityDescriptor>`;

  it('fetches the IdP metadata and fills entry point, certificate and issuer, enough to enable SAML at once', async () => {
    receiver.respondWith(() => ({ status: 200, headers: { 'content-type': 'application/samlmetadata+xml' }, body: metadataXml() }));
    const tenant = await service.createTenant();
    const { status, body } = await postSso(service, tenant, { samlMetadataUrl: `${receiver.url}/metadata`, samlEnabled: true });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      samlEnabled: true,
      samlMetadataUrl: `${receiver.url}/metadata`,
      samlEntryPoint: idp.entryPoint,
      samlIssuer: idp.issuer,
      samlCertificates: [expect.objectContaining({ fingerprintSha256: new X509Certificate(idp.certificatePem).fingerprint256 })],
    });
  });

  it('lets fields sent alongside win over the metadata', async () => {
    receiver.respondWith(() => ({ status: 200, body: metadataXml() }));
    const tenant = await service.createTenant();
    const { body } = await postSso(service, tenant, { samlMetadataUrl: `${receiver.url}/metadata`, samlIssuer: 'https://override.example/' });
    expect(body).toMatchObject({ samlIssuer: 'https://override.example/', samlEntryPoint: idp.entryPoint });
  });

  it.each([
    ['not XML', () => 'this is not xml <', /well-formed/],
    ['no HTTP-Redirect endpoint', () => metadataXml().replace(/<md:SingleSignOnService Binding="[^"]+HTTP-Redirect"[^>]+>/, ''), /HTTP-Redirect/],
    ['an http entry point', () => metadataXml({ entryPoint: 'http://idp.example.test/sso' }), /not https/],
    ['no signing certificate', () => metadataXml({ certificates: [] }), /certificate/],
  ])('refuses metadata with %s (400 SAML_METADATA_INVALID)', async (_name, xml, message) => {
    receiver.respondWith(() => ({ status: 200, body: xml() }));
    const tenant = await service.createTenant();
    const { status, body } = await postSso(service, tenant, { samlMetadataUrl: `${receiver.url}/metadata` });
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'SAML_METADATA_INVALID', message: expect.stringMatching(message) });
  });

  it('reports a metadata URL that answers with an error', async () => {
    receiver.respondWith(() => ({ status: 404, body: 'no' }));
    const tenant = await service.createTenant();
    const { status, body } = await postSso(service, tenant, { samlMetadataUrl: `${receiver.url}/missing` });
    expect(status).toBe(400);
    expect(body).toMatchObject({ code: 'SAML_METADATA_UNREACHABLE', message: expect.stringContaining('404') });
  });
});
