// No credential reaches past its own scopes by a side door: a webhook subscription is a standing read of
// its events, so a key may send to a URL only the events it could read through the API; and a FHIR
// conditional create answers with the match, so it needs fhir:read as well as fhir:write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope } from '../../src/auth/principal.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { apiClient, webhookEnv } from '../webhooks/helpers.ts';

const TARGET = 'https://127.0.0.1:9/receiver';

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: webhookEnv() });
});
afterAll(async () => service?.stop());

describe('webhook subscriptions made with an API key', () => {
  it('carry only events the key could read: tapering and authorizations need authorization:read, invoice.paid an administrator; a key cannot redirect a subscription it could not have made', async () => {
    const tenant = await service.createTenant();
    const withScopes = async (scopes: Scope[]) => apiClient(service, { headers: keyHeaders((await createApiKey(service, tenant, { scopes })).rawKey) });
    const manager = await withScopes(['webhook:manage']);
    const reader = await withScopes(['webhook:manage', 'authorization:read']);
    const everything = await withScopes(['webhook:manage', 'authorization:read', 'cohort:read', 'export:read', 'simulate:run']);
    const admin = apiClient(service, tenant);

    expect((await manager.post('/api/employer/webhooks', { url: TARGET, events: ['test.ping'] })).status).toBe(201);
    const refused = await manager.post('/api/employer/webhooks', { url: TARGET, events: ['test.ping', 'tapering.proposed', 'export.ready'] });
    expect(refused).toMatchObject({ status: 403, body: { code: 'INSUFFICIENT_SCOPE', requiredScopes: ['authorization:read', 'export:read'] } });
    expect((await reader.post('/api/employer/webhooks', { url: TARGET, events: ['tapering.proposed', 'authorization.reviewed'] })).status).toBe(201);
    expect((await everything.post('/api/employer/webhooks', { url: TARGET, events: ['cohort.uploaded', 'export.ready', 'simulation.completed'] })).status).toBe(201);
    expect(await everything.post('/api/employer/webhooks', { url: TARGET, events: ['invoice.paid'] })).toMatchObject({ status: 403, body: { code: 'SESSION_REQUIRED' } });

    // An administrator's subscription to billing: a key may not point it elsewhere, nor add what it cannot read.
    const billing = await admin.post('/api/employer/webhooks', { url: TARGET, events: ['invoice.paid'] });
    expect(billing.status).toBe(201);
    expect(await everything.patch(`/api/employer/webhooks/${billing.body.id}`, { url: 'https://127.0.0.1:9/elsewhere' })).toMatchObject({ status: 403, body: { code: 'SESSION_REQUIRED' } });
    expect((await admin.get(`/api/employer/webhooks/${billing.body.id}`)).body.url).toBe(TARGET);
    const ping = await manager.post('/api/employer/webhooks', { url: TARGET, events: ['test.ping'] });
    expect(await manager.patch(`/api/employer/webhooks/${ping.body.id}`, { events: ['authorization.reviewed'] })).toMatchObject({ status: 403, body: { code: 'INSUFFICIENT_SCOPE' } });
    // What changes neither the destination nor the events stays open to webhook:manage.
    expect((await manager.patch(`/api/employer/webhooks/${billing.body.id}`, { description: 'billing' })).status).toBe(200);
    expect((await manager.patch(`/api/employer/webhooks/${ping.body.id}`, { url: 'https://127.0.0.1:9/moved' })).status).toBe(200);
  });
});

describe('a FHIR conditional create', () => {
  it('needs fhir:read besides fhir:write, since it answers with the match', async () => {
    const tenant = await service.createTenant();
    const headers = async (scopes: Scope[]) => ({ ...keyHeaders((await createApiKey(service, tenant, { scopes })).rawKey), 'content-type': 'application/fhir+json' });
    const patient = { resourceType: 'Patient', identifier: [{ system: 'urn:test:member', value: 'M-1' }], name: [{ family: 'Hidden' }] };
    const create = async (scopes: Scope[], conditional: boolean) =>
      fetch(`${service.url}/api/fhir/Patient`, {
        method: 'POST',
        headers: { ...(await headers(scopes)), ...(conditional ? { 'if-none-exist': 'identifier=urn:test:member|M-1' } : {}) },
        body: JSON.stringify(patient),
      });
    expect((await create(['fhir:write'], false)).status).toBe(201);
    const refused = await create(['fhir:write'], true);
    expect(refused.status).toBe(403);
    const outcome = (await refused.json()) as { resourceType: string; issue: Array<{ code: string; diagnostics: string }> };
    expect(outcome).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'forbidden' }] });
    expect(JSON.stringify(outcome)).not.toContain('Hidden');
    const matched = await create(['fhir:read', 'fhir:write'], true);
    expect(matched.status).toBe(200);
    expect(((await matched.json()) as { name: Array<{ family: string }> }).name[0]!.family).toBe('Hidden');
  });
});
