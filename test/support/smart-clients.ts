// SMART Backend Services for tests: a client registered through the real management route with a key
// pair made here (RS384 or ES384), assertions signed with jose, and tokens from the real token endpoint.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { TestService } from './service.ts';

export type SmartClientKey = { kid: string; alg: 'RS384' | 'ES384'; privateKey: CryptoKey; publicJwk: JWK };
export type RegisteredClient = { clientId: string; key: SmartClientKey; body: Record<string, any> };

export async function smartClientKey(alg: 'RS384' | 'ES384' = 'ES384'): Promise<SmartClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `kid-${randomUUID()}`;
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg } };
}

export async function registerSmartClient(
  service: Pick<TestService, 'url' | 'sessionHeaders'>,
  tenant: { cookie: string },
  options: { scopes?: string[]; key?: SmartClientKey; jwksUrl?: string; name?: string } = {},
): Promise<RegisteredClient> {
  const key = options.key ?? (await smartClientKey());
  const response = await fetch(`${service.url}/api/employer/smart-clients`, {
    method: 'POST',
    headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
    body: JSON.stringify({
      name: options.name ?? 'bulk client',
      scopes: options.scopes ?? ['system/*.cruds'],
      ...(options.jwksUrl ? { jwksUrl: options.jwksUrl } : { jwks: { keys: [key.publicJwk] } }),
    }),
  });
  const body = (await response.json()) as Record<string, any>;
  if (response.status !== 201) throw new Error(`registering a SMART client failed: ${response.status} ${JSON.stringify(body)}`);
  return { clientId: body.clientId, key, body };
}

export type AssertionClaims = { iss?: string; sub?: string; aud?: string; exp?: number; jti?: string; kid?: string };

/** A client assertion as SMART Backend Services clients sign it; `claims` overrides any part (for negative tests). */
export async function clientAssertion(service: Pick<TestService, 'url'>, client: RegisteredClient, claims: AssertionClaims = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti: claims.jti ?? randomUUID() })
    .setProtectedHeader({ alg: client.key.alg, kid: claims.kid ?? client.key.kid, typ: 'JWT' })
    .setIssuer(claims.iss ?? client.clientId)
    .setSubject(claims.sub ?? client.clientId)
    .setAudience(claims.aud ?? `${service.url}/api/oauth/token`)
    .setExpirationTime(claims.exp ?? now + 240)
    .sign(client.key.privateKey);
}

/** POST to the token endpoint, form-encoded; the status and body. */
export async function requestToken(service: Pick<TestService, 'url'>, assertion: string, scope = 'system/*.rs', grantType = 'client_credentials') {
  const response = await fetch(`${service.url}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: grantType, scope, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, any> };
}

/** An access token of `client` for `scope`. */
export async function accessToken(service: Pick<TestService, 'url'>, client: RegisteredClient, scope = 'system/*.rs'): Promise<string> {
  const { status, body } = await requestToken(service, await clientAssertion(service, client), scope);
  if (status !== 200) throw new Error(`no access token: ${status} ${JSON.stringify(body)}`);
  return body.access_token;
}
