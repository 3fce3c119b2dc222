// HTTP helpers shared by the SSO tests: the configuration routes as an admin, and the browser's side of
// a SAML login (start, read the AuthnRequest id from the redirect, post the IdP's response).
import { verify, type X509Certificate } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { expect } from 'vitest';
import { DOMParser } from '@xmldom/xmldom';
import { ssoCapability } from '../../src/sso/capability.ts';
import { summariseSamlRefusals } from '../../src/sso/saml-refusals.ts';
import type { TestIdp } from '../support/saml-idp.ts';
import type { TestService } from '../support/service.ts';

export type Tenant = { employerId: string; adminUserId: string; cookie: string };
export type JsonBody = Record<string, unknown> & { code?: string; message?: string };

export async function postSso(service: TestService, tenant: Pick<Tenant, 'cookie'>, body: unknown): Promise<{ status: number; body: JsonBody; headers: Headers }> {
  const response = await fetch(`${service.url}/api/employer/sso`, {
    method: 'POST',
    headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as JsonBody, headers: response.headers };
}

export async function getSso(service: TestService, tenant: Pick<Tenant, 'cookie'>): Promise<{ status: number; body: JsonBody }> {
  const response = await fetch(`${service.url}/api/employer/sso`, { headers: { cookie: tenant.cookie } });
  return { status: response.status, body: (await response.json()) as JsonBody };
}

/** Turns SAML on for the tenant with the test IdP's entry point, certificate and issuer. */
export async function enableSaml(service: TestService, tenant: Tenant, idp: TestIdp, extra: Record<string, unknown> = {}) {
  const result = await postSso(service, tenant, {
    samlEnabled: true,
    samlEntryPoint: idp.entryPoint,
    samlCertificate: idp.certificatePem,
    samlIssuer: idp.issuer,
    samlEmailAttribute: 'email',
    samlFirstNameAttribute: 'firstName',
    samlLastNameAttribute: 'lastName',
    ...extra,
  });
  if (result.status !== 200) throw new Error(`enabling SAML failed: ${result.status} ${JSON.stringify(result.body)}`);
  return result.body;
}

export function spUrls(service: Pick<TestService, 'url'>, employerId: string) {
  return { audience: `${service.url}/api/auth/saml/metadata/${employerId}`, acsUrl: `${service.url}/api/auth/saml/callback/${employerId}` };
}

/** GET /api/auth/saml/start/...; on a redirect, the AuthnRequest id read from its deflated SAMLRequest. */
export async function startLogin(service: TestService, employerId: string, returnTo?: string) {
  const query = returnTo === undefined ? '' : `?returnTo=${encodeURIComponent(returnTo)}`;
  const response = await fetch(`${service.url}/api/auth/saml/start/${employerId}${query}`, { redirect: 'manual' });
  const location = response.headers.get('location');
  if (response.status !== 302 || !location) return { response, location, requestId: null };
  const samlRequest = new URL(location).searchParams.get('SAMLRequest') ?? '';
  const xml = inflateRawSync(Buffer.from(samlRequest, 'base64')).toString('utf8');
  const requestId = new DOMParser().parseFromString(xml, 'text/xml').documentElement?.getAttribute('ID') ?? null;
  return { response, location, requestId };
}

/** What the browser posts to the ACS URL (HTTP-POST binding). */
export async function postCallback(service: Pick<TestService, 'url'>, employerId: string, samlResponse: string, relayState?: string) {
  const form = new URLSearchParams({ SAMLResponse: samlResponse, ...(relayState === undefined ? {} : { RelayState: relayState }) });
  const response = await fetch(`${service.url}/api/auth/saml/callback/${employerId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://idp.example.test' },
    body: form,
    redirect: 'manual',
  });
  const body = response.status === 302 ? null : ((await response.json()) as JsonBody);
  return { status: response.status, location: response.headers.get('location'), body };
}

/** Follows a sign-in link as a browser would (confirmation page, then its form) and returns the session cookie it set. */
export { followSignInLink as followSignIn } from '../support/sign-in.ts';

/**
 * Records the refused callbacks counted so far as the worker's job would once their minute is over:
 * this process's counts written, then every minute up to now summarised (the job's `now` a minute on).
 */
export async function recordSamlRefusals(service: Pick<TestService, 'ctx' | 'servicesOf'>) {
  await service.servicesOf(ssoCapability).refusals.flush();
  return summariseSamlRefusals(service.ctx, new Date(Date.now() + 2 * 60_000));
}

/**
 * The redirect's signature checked as SAML bindings 3.4.4.1 says: over the query's own encoded
 * `SAMLRequest=...&RelayState=...&SigAlg=...`, with `certificate`.
 */
export function redirectSignatureVerifies(location: string, certificate: X509Certificate): boolean {
  const query = new URL(location).search.slice(1).split('&');
  const raw = (name: string) => query.find((part) => part.startsWith(`${name}=`));
  const signed = ['SAMLRequest', 'SAMLResponse', 'RelayState', 'SigAlg'].map(raw).filter((part) => part !== undefined).join('&');
  const signature = Buffer.from(decodeURIComponent(raw('Signature')!.slice('Signature='.length)), 'base64');
  expect(decodeURIComponent(raw('SigAlg')!.slice('SigAlg='.length))).toBe('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256');
  return verify('sha256', Buffer.from(signed), certificate.publicKey, signature);
}


/** The XML a SAMLRequest or SAMLResponse of an HTTP-Redirect URL carries (deflated, base64). */
export function redirectMessageXml(location: string, param: 'SAMLRequest' | 'SAMLResponse'): string {
  return inflateRawSync(Buffer.from(new URL(location).searchParams.get(param) ?? '', 'base64')).toString('utf8');
}
