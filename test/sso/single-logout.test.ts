// Issue 24: SAML Single Logout, both ways, with a real IdP key pair signing the HTTP-Redirect messages
// and the service's own SP key signing its own, verified with the certificate its SP metadata publishes.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, followSignIn, postCallback, redirectMessageXml, redirectSignatureVerifies, spUrls, startLogin, type Tenant } from './sso-test-kit.ts';

let service: TestService;
let idp: TestIdp;
let tenant: Tenant;
let spCertificate: X509Certificate;

beforeAll(async () => {
  service = await startTestService();
  idp = await createTestIdp();
  tenant = await service.createTenant();
  await enableSaml(service, tenant, idp, { samlLogoutUrl: idp.logoutUrl });
  const metadata = await (await fetch(`${service.url}/api/auth/saml/metadata/${tenant.employerId}`)).text();
  expect(metadata).toContain(`<SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${service.url}/api/auth/saml/logout/${tenant.employerId}"/>`);
  spCertificate = new X509Certificate(Buffer.from(/<KeyDescriptor use="signing">.*?<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!, 'base64'));
});
afterAll(async () => service?.stop());

const sloUrl = () => `${service.url}/api/auth/saml/logout/${tenant.employerId}`;

/** Signs `email` in through SAML and returns the session cookie. */
async function samlSession(email: string): Promise<string> {
  const { requestId } = await startLogin(service, tenant.employerId);
  const callback = await postCallback(service, tenant.employerId, await idp.createLoginResponse({ requestId: requestId!, ...spUrls(service, tenant.employerId), email }));
  return (await followSignIn(callback.location!)).cookie!;
}
const sessionStatus = async (cookie: string) => (await fetch(`${service.url}/api/auth/session`, { headers: { cookie } })).status;
const idpLogout = (query: string) => fetch(`${sloUrl()}?${query}`, { redirect: 'manual' });

describe('IdP-initiated Single Logout', () => {
  it("ends every session of the user the signed LogoutRequest names, answers with a signed LogoutResponse, and refuses the request's replay", async () => {
    const email = `slo.idp.${Date.now()}@employer.example`;
    const [first, second, bystander] = [await samlSession(email), await samlSession(email), await samlSession(`other.${Date.now()}@employer.example`)];
    expect(await sessionStatus(first)).toBe(200);

    const { query, requestId } = idp.logoutRequestQuery({ nameId: email, destination: sloUrl() });
    const answer = await idpLogout(query);
    expect(answer.status).toBe(302);
    const location = answer.headers.get('location')!;
    expect(location.startsWith(idp.logoutUrl)).toBe(true);
    expect(redirectSignatureVerifies(location, spCertificate)).toBe(true);
    const response = redirectMessageXml(location, 'SAMLResponse');
    expect(response).toContain(`InResponseTo="${requestId}"`);
    expect(response).toContain('urn:oasis:names:tc:SAML:2.0:status:Success');

    expect([await sessionStatus(first), await sessionStatus(second), await sessionStatus(bystander)]).toEqual([401, 401, 200]);
    const replay = await idpLogout(query);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ code: 'SAML_LOGOUT_REJECTED', reason: 'REPLAYED' });
  });

  it('refuses an unsigned LogoutRequest and one signed by another key, ending nothing', async () => {
    const email = `slo.forged.${Date.now()}@employer.example`;
    const cookie = await samlSession(email);
    const unsigned = await idpLogout(idp.logoutRequestQuery({ nameId: email, destination: sloUrl(), signed: false }).query);
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toMatchObject({ reason: 'UNSIGNED' });
    const impostor = await createTestIdp({ issuer: idp.issuer });
    const forged = await idpLogout(impostor.logoutRequestQuery({ nameId: email, destination: sloUrl() }).query);
    expect(forged.status).toBe(401);
    expect(await forged.json()).toMatchObject({ reason: 'SIGNATURE_INVALID' });
    expect(await sessionStatus(cookie)).toBe(200);
  });
});

describe('SP-initiated Single Logout', () => {
  it('ends the session here first, then sends the browser to the IdP with a signed LogoutRequest; the IdP\'s LogoutResponse lands on the console', async () => {
    const email = `slo.sp.${Date.now()}@employer.example`;
    const cookie = await samlSession(email);
    const logout = await fetch(`${service.url}/api/auth/saml/logout`, { method: 'POST', headers: service.sessionHeaders(cookie) });
    expect(logout.status).toBe(200);
    expect(await sessionStatus(cookie)).toBe(401);
    const { redirectUrl } = (await logout.json()) as { redirectUrl: string };
    expect(redirectUrl.startsWith(idp.logoutUrl)).toBe(true);
    expect(redirectSignatureVerifies(redirectUrl, spCertificate)).toBe(true);
    const request = redirectMessageXml(redirectUrl, 'SAMLRequest');
    expect(request).toContain(email);
    const requestId = /ID="([^"]+)"/.exec(request)![1]!;

    const answer = await idpLogout(idp.logoutResponseQuery({ inResponseTo: requestId, destination: sloUrl() }));
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe(`${service.url}/`);
  });
});
