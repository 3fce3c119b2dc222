// SMART client management (/api/employer/smart-clients): register with an inline JWK Set or a JWKS URL
// (served by a real HTTPS server, cached as its headers say), list, read, replace the key set, revoke;
// audited; public keys only; session-only; another employer's client 404.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { createSmartClientsCapability } from '../../src/smart-clients/capability.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { clientAssertion, registerSmartClient, requestToken, smartClientKey } from '../support/smart-clients.ts';

let service: TestService;
let receiver: HttpsReceiver;
let tenant: Awaited<ReturnType<TestService['createTenant']>>;
/** Moves the service's clock ahead of the real one (key-set refetch limits). */
let clockAhead = 0;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  const smartClients = createSmartClientsCapability({ ca: receiver.ca, clock: () => Date.now() + clockAhead });
  service = await startTestService({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    capabilities: capabilities.map((capability) => (capability.name === 'smart-clients' ? smartClients : capability)),
  });
  tenant = await service.createTenant();
});
afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

const clientsUrl = () => `${service.url}/api/employer/smart-clients`;
async function send(method: string, url: string, body?: unknown, headers = service.sessionHeaders(tenant.cookie)) {
  const response = await fetch(url, { method, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: response.status, body: (await response.json()) as any };
}

describe('SMART client management', () => {
  it('registers, lists, reads, replaces the keys of and revokes a client, each audited', async () => {
    const registered = await registerSmartClient(service, tenant, { scopes: ['system/*.rs', 'system/*.read'], name: 'Bulk tool' });
    expect(registered.body).toMatchObject({ clientId: expect.stringMatching(/^smart_/), name: 'Bulk tool', scopes: ['system/*.rs', 'system/*.read'], status: 'active', jwksUrl: null, revokedAt: null });
    const { clientId } = registered;
    expect((await send('GET', `${clientsUrl()}/${clientId}`)).body).toEqual(registered.body);
    expect((await send('GET', clientsUrl())).body.clients.map((client: any) => client.clientId)).toContain(clientId);

    // A new key set: the old key is refused from then on, the new one accepted.
    const newKey = await smartClientKey('RS384');
    const replaced = await send('PUT', `${clientsUrl()}/${clientId}/keys`, { jwks: { keys: [newKey.publicJwk] } });
    expect(replaced).toMatchObject({ status: 200, body: { jwks: { keys: [{ kid: newKey.kid }] } } });
    expect((await requestToken(service, await clientAssertion(service, registered))).body.error).toBe('invalid_client');
    expect((await requestToken(service, await clientAssertion(service, { ...registered, key: newKey }))).status).toBe(200);

    const revoked = await send('DELETE', `${clientsUrl()}/${clientId}`);
    expect(revoked).toMatchObject({ status: 200, body: { status: 'revoked', revokedAt: expect.any(String) } });
    expect((await send('DELETE', `${clientsUrl()}/${clientId}`)).body.revokedAt).toBe(revoked.body.revokedAt);
    expect(await send('PUT', `${clientsUrl()}/${clientId}/keys`, { jwks: { keys: [newKey.publicJwk] } })).toMatchObject({ status: 409, body: { code: 'SMART_CLIENT_REVOKED' } });

    const actions = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ action: z.string() }))`
      SELECT action FROM audit_log WHERE target_id = ${clientId} AND actor_id = ${tenant.adminUserId} ORDER BY global_position`);
    expect(actions).toEqual(['smart_client.registered', 'smart_client.keys_replaced', 'smart_client.revoked']);
  });

  it('refuses private keys, bad scopes, both or neither key source, and non-https URLs', async () => {
    const key = await smartClientKey('ES384');
    const withPrivate = { ...key.publicJwk, d: 'c2VjcmV0' };
    const base = { name: 'x', scopes: ['system/*.rs'] };
    expect(await send('POST', clientsUrl(), { ...base, jwks: { keys: [withPrivate] } })).toMatchObject({ status: 400, body: { code: 'INVALID_JWKS' } });
    expect(await send('POST', clientsUrl(), { ...base, jwks: { keys: [{ ...key.publicJwk, kid: undefined }] } })).toMatchObject({ status: 400, body: { code: 'INVALID_JWKS' } });
    expect(await send('POST', clientsUrl(), { ...base, scopes: ['system/Practitioner.rs'], jwks: { keys: [key.publicJwk] } })).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await send('POST', clientsUrl(), { ...base, scopes: ['user/*.rs'], jwks: { keys: [key.publicJwk] } })).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await send('POST', clientsUrl(), { ...base })).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await send('POST', clientsUrl(), { ...base, jwks: { keys: [key.publicJwk] }, jwksUrl: `${receiver.url}/jwks` })).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await send('POST', clientsUrl(), { ...base, jwksUrl: 'http://example.com/jwks' })).toMatchObject({ status: 400, body: { code: 'INVALID_JWKS_URL' } });
  });

  it('is for administrators\' sessions only, and 404 for another employer\'s client', async () => {
    const { clientId } = await registerSmartClient(service, tenant);
    const { rawKey } = await createApiKey(service, tenant, { scopes: ['fhir:read', 'fhir:write'] });
    expect(await send('GET', clientsUrl(), undefined, keyHeaders(rawKey))).toMatchObject({ status: 403, body: { code: 'SESSION_REQUIRED' } });
    const other = await service.createTenant();
    expect((await send('GET', `${clientsUrl()}/${clientId}`, undefined, service.sessionHeaders(other.cookie))).status).toBe(404);
    expect((await send('DELETE', `${clientsUrl()}/${clientId}`, undefined, service.sessionHeaders(other.cookie))).status).toBe(404);
  });

  it('fetches a jwksUrl over https, keeps it as Cache-Control says, and fetches again for an unknown kid', async () => {
    let served = await smartClientKey('ES384');
    receiver.respondWith(() => ({ status: 200, headers: { 'content-type': 'application/json', 'cache-control': 'max-age=3600' }, body: JSON.stringify({ keys: [served.publicJwk] }) }));
    const client = await registerSmartClient(service, tenant, { jwksUrl: `${receiver.url}/jwks.json`, key: served });
    expect(client.body).toMatchObject({ jwks: null, jwksUrl: `${receiver.url}/jwks.json` });
    const fetchesBefore = receiver.requests.length;
    expect((await requestToken(service, await clientAssertion(service, client))).status).toBe(200);
    expect((await requestToken(service, await clientAssertion(service, client))).status).toBe(200);
    expect(receiver.requests.length - fetchesBefore).toBe(1);
    expect(receiver.requests.at(-1)!.path).toBe('/jwks.json');

    // Rotated: an assertion with a kid not in the kept set fetches it again, at most once a minute.
    served = await smartClientKey('RS384');
    clockAhead = 61_000;
    const rotated = { ...client, key: served };
    expect((await requestToken(service, await clientAssertion(service, rotated))).status).toBe(200);
    expect(receiver.requests.length - fetchesBefore).toBe(2);

    // A key set that cannot be fetched authenticates nobody.
    receiver.respondWith(() => ({ status: 500, body: 'down' }));
    const unreachable = await registerSmartClient(service, tenant, { jwksUrl: `${receiver.url}/down.json` });
    expect(await requestToken(service, await clientAssertion(service, unreachable))).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });
});
