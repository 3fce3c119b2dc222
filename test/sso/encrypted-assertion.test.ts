// Issue 24: an employer whose IdP policy encrypts assertions signs in. The IdP (test/support/saml-idp.ts)
// signs the assertion and samlify encrypts it to the encryption certificate of the service's own SP
// metadata; the service decrypts it with its SP key and checks it as a plain one, signature included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, postCallback, spUrls, startLogin, type Tenant } from './sso-test-kit.ts';

let service: TestService;
let idp: TestIdp;
let tenant: Tenant;

beforeAll(async () => {
  service = await startTestService();
  idp = await createTestIdp();
  tenant = await service.createTenant();
  await enableSaml(service, tenant, idp);
});
afterAll(async () => service?.stop());

const spMetadata = async () => (await fetch(`${service.url}/api/auth/saml/metadata/${tenant.employerId}`)).text();

/** A login whose response `build` makes from the request id, then encrypted to the SP. */
async function encryptedLogin(build: (requestId: string) => Promise<string> | string) {
  const { requestId } = await startLogin(service, tenant.employerId);
  const encrypted = await idp.encryptAssertion(await build(requestId!), await spMetadata());
  expect(Buffer.from(encrypted, 'base64').toString('utf8')).toContain('EncryptedAssertion');
  expect(Buffer.from(encrypted, 'base64').toString('utf8')).not.toContain('saml:Assertion');
  return postCallback(service, tenant.employerId, encrypted);
}

const email = () => `encrypted.${Date.now()}.${Math.random().toString(36).slice(2, 6)}@employer.example`;

describe('encrypted assertions', () => {
  it('signs in with an encrypted, signed assertion (the assertion signed, the Response not)', async () => {
    const result = await encryptedLogin((requestId) => idp.craftResponse({ requestId, ...spUrls(service, tenant.employerId), email: email(), signed: 'assertion' }));
    expect(result.status).toBe(302);
  });

  it('refuses a Response signed before its assertion was encrypted: the signature no longer covers what arrives', async () => {
    // Signed as a whole before encryption, the Response's signature no longer matches once the assertion is replaced by its ciphertext.
    const result = await encryptedLogin((requestId) => idp.craftResponse({ requestId, ...spUrls(service, tenant.employerId), email: email(), signed: 'response' }));
    expect(result).toMatchObject({ status: 401, body: { reason: 'SIGNATURE_INVALID' } });
  });

  it('refuses an assertion altered before encryption (its signature no longer verifies)', async () => {
    const result = await encryptedLogin((requestId) => idp.craftResponse({ requestId, ...spUrls(service, tenant.employerId), email: 'user@employer.example', tamperedEmail: 'admin@employer.example' }));
    expect(result).toMatchObject({ status: 401, body: { reason: 'SIGNATURE_INVALID' } });
  });

  it('refuses ciphertext altered in transit', async () => {
    const { requestId } = await startLogin(service, tenant.employerId);
    const response = idp.craftResponse({ requestId: requestId!, ...spUrls(service, tenant.employerId), email: email() });
    const xml = Buffer.from(await idp.encryptAssertion(response, await spMetadata()), 'base64').toString('utf8');
    // Flip one base64 character of the encrypted data (the last CipherValue: the assertion, not the key).
    const at = xml.lastIndexOf('</xenc:CipherValue>') - 20;
    const tampered = xml.slice(0, at) + (xml[at] === 'A' ? 'B' : 'A') + xml.slice(at + 1);
    const result = await postCallback(service, tenant.employerId, Buffer.from(tampered, 'utf8').toString('base64'));
    expect(result.status).toBe(401);
  });

  it('refuses an encrypted assertion for an employer whose SP key it was not encrypted to', async () => {
    const other = await service.createTenant();
    await enableSaml(service, other, idp);
    const { requestId } = await startLogin(service, other.employerId);
    const response = idp.craftResponse({ requestId: requestId!, ...spUrls(service, other.employerId), email: email() });
    const result = await postCallback(service, other.employerId, await idp.encryptAssertion(response, await spMetadata()));
    expect(result.status).toBe(401);
  });
});
