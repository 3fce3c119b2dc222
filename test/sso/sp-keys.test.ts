// Issue 24: the service's own SAML service-provider key pair per employer: generated with the first
// save, published in the SP metadata for signing and encryption, rotated with an overlap, and signing
// AuthnRequests when the employer asks (verified here as an IdP does, with the certificate the SP
// metadata publishes, over the HTTP-Redirect binding's signed query string).
import { X509Certificate } from 'node:crypto';
import { DOMParser } from '@xmldom/xmldom';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, getSso, postCallback, redirectSignatureVerifies, spUrls, startLogin, type Tenant } from './sso-test-kit.ts';

let service: TestService;
let idp: TestIdp;

beforeAll(async () => {
  service = await startTestService();
  idp = await createTestIdp();
});
afterAll(async () => service?.stop());

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DSIG = 'http://www.w3.org/2000/09/xmldsig#';

/** The SP metadata as the IdP administrator downloads it: AuthnRequestsSigned and the certificates by use. */
async function spMetadata(employerId: string) {
  const response = await fetch(`${service.url}/api/auth/saml/metadata/${employerId}`);
  expect(response.headers.get('content-disposition')).toContain('attachment');
  const root = new DOMParser().parseFromString(await response.text(), 'text/xml').documentElement!;
  const descriptor = root.getElementsByTagNameNS(MD, 'SPSSODescriptor')[0]!;
  const certificates = (use: string) =>
    Array.from(descriptor.getElementsByTagNameNS(MD, 'KeyDescriptor'))
      .filter((key) => key.getAttribute('use') === use)
      .map((key) => new X509Certificate(Buffer.from(key.getElementsByTagNameNS(DSIG, 'X509Certificate')[0]!.textContent!, 'base64')));
  return { authnRequestsSigned: descriptor.getAttribute('AuthnRequestsSigned'), signing: certificates('signing'), encryption: certificates('encryption') };
}

async function loginSucceeds(tenant: Tenant, location: string, requestId: string) {
  expect(new URL(location).origin + new URL(location).pathname).toBe(idp.entryPoint);
  const result = await postCallback(service, tenant.employerId, await idp.createLoginResponse({ requestId, ...spUrls(service, tenant.employerId), email: `user.${Date.now()}@employer.example` }));
  return result.status === 302;
}

const rotate = (tenant: Tenant, body: Record<string, unknown>) =>
  fetch(`${service.url}/api/employer/sso/sp-keys/rotate`, { method: 'POST', headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' }, body: JSON.stringify(body) });

type SpKeyView = { keyId: string; fingerprintSha256: string; retiresAt: string | null; signing: boolean };

describe('SAML SP key pair', () => {
  it('is generated with the first save and published for signing and encryption; requests are unsigned until asked', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp);
    const { body } = await getSso(service, tenant);
    const [key] = body.spKeys as SpKeyView[];
    expect(body.spKeys).toHaveLength(1);
    expect(key).toMatchObject({ signing: true, retiresAt: null });
    const metadata = await spMetadata(tenant.employerId);
    expect(metadata.authnRequestsSigned).toBe('false');
    expect(metadata.signing.map((certificate) => certificate.fingerprint256)).toEqual([key!.fingerprintSha256]);
    expect(metadata.encryption.map((certificate) => certificate.fingerprint256)).toEqual([key!.fingerprintSha256]);
    const { location } = await startLogin(service, tenant.employerId);
    expect(new URL(location!).searchParams.has('Signature')).toBe(false);

    // Stored sealed: the private key is nowhere in clear, neither in the read model nor in the events.
    const stored = await service.ctx.db.slonik.oneFirst(sql.type(z.object({ text: z.string() }))`
      SELECT (SELECT saml_sp_keys::text FROM sso_configurations WHERE employer_id = ${tenant.employerId}) || (SELECT string_agg(data::text, '') FROM events WHERE stream_name LIKE ${`%${tenant.employerId}%`}) AS text`);
    expect(stored).not.toContain('PRIVATE KEY');
    expect(stored).toContain('sealedPrivateKey');
  });

  it('signs AuthnRequests when the employer asks, verifiably with the certificate the SP metadata publishes', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp, { samlSignAuthnRequests: true });
    const metadata = await spMetadata(tenant.employerId);
    expect(metadata.authnRequestsSigned).toBe('true');
    const { location, requestId } = await startLogin(service, tenant.employerId);
    expect(redirectSignatureVerifies(location!, metadata.signing[0]!)).toBe(true);
    // One changed byte of the request and it no longer verifies.
    const tampered = location!.replace(/SAMLRequest=([^&]{10})/, (_match, start: string) => `SAMLRequest=${start.slice(0, 9)}${start[9] === 'A' ? 'B' : 'A'}`);
    expect(redirectSignatureVerifies(tampered, metadata.signing[0]!)).toBe(false);
    expect(await loginSucceeds(tenant, location!, requestId!)).toBe(true);
  });

  it('rotates with an overlap: the new key published at once, the old one signing until the overlap ends; 0 replaces it at once', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp, { samlSignAuthnRequests: true });
    const [first] = (await getSso(service, tenant)).body.spKeys as SpKeyView[];

    const overlapping = await rotate(tenant, { overlapHours: 24 });
    expect(overlapping.status).toBe(200);
    const during = ((await overlapping.json()) as { spKeys: SpKeyView[] }).spKeys;
    expect(during.map((key) => [key.keyId, key.signing])).toEqual([
      [first!.keyId, true],
      [expect.any(String), false],
    ]);
    expect(Date.parse(during[0]!.retiresAt!) - Date.now()).toBeGreaterThan(23 * 3600_000);
    const metadata = await spMetadata(tenant.employerId);
    expect(metadata.signing.map((certificate) => certificate.fingerprint256)).toEqual(during.map((key) => key.fingerprintSha256));
    expect(metadata.encryption).toHaveLength(2);
    const { location } = await startLogin(service, tenant.employerId);
    expect(redirectSignatureVerifies(location!, metadata.signing[0]!)).toBe(true);

    const other = await service.createTenant();
    await enableSaml(service, other, idp, { samlSignAuthnRequests: true });
    const [replaced] = (await spMetadata(other.employerId)).signing;
    const immediate = ((await (await rotate(other, { overlapHours: 0 })).json()) as { spKeys: SpKeyView[] }).spKeys;
    expect(immediate).toHaveLength(1);
    const [current] = (await spMetadata(other.employerId)).signing;
    expect(current!.fingerprint256).toBe(immediate[0]!.fingerprintSha256);
    const after = await startLogin(service, other.employerId);
    expect(redirectSignatureVerifies(after.location!, current!)).toBe(true);
    expect(redirectSignatureVerifies(after.location!, replaced!)).toBe(false);

    const audit = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ action: z.string() }))`SELECT action FROM audit_log WHERE employer_id = ${tenant.employerId} AND action = 'sso.sp_key.issue'`);
    expect(audit).toHaveLength(2);
  });

  it('refuses an overlap beyond 90 days', async () => {
    const tenant = await service.createTenant();
    expect((await rotate(tenant, { overlapHours: 90 * 24 + 1 })).status).toBe(400);
  });
});
