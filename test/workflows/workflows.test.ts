// The platform workflows end to end: the internal platform API with platform tokens, the employer
// routes with their scopes, tenant isolation, and for each webhook event type the operation that
// produces it and its signed delivery at a real HTTPS receiver, validated against its data schema.
import { verify } from '@octokit/webhooks-methods';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope } from '../../src/auth/principal.ts';
import { webhookDataSchemas } from '../../src/webhooks/payloads.ts';
import { createPlatformToken, revokePlatformToken } from '../../src/workflows/commands.ts';
import type { PlatformFamily } from '../../src/workflows/events.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import type { HttpsReceiver } from '../support/https-receiver.ts';
import { addPatient, addPatients } from '../support/patients.ts';
import type { TestService } from '../support/service.ts';
import { startServiceWithReceiver } from '../support/service-with-receiver.ts';
import { apiClient, subscribe, waitUntil, type ApiResponse } from '../webhooks/helpers.ts';

let receiver: HttpsReceiver;
let service: TestService;
let stop: () => Promise<void>;
const OPERATOR = { tenantId: null, actor: { type: 'system', id: 'test' } } as const;

beforeAll(async () => ({ service, receiver, stop } = await startServiceWithReceiver()));
afterAll(() => stop?.());

async function platformToken(families: PlatformFamily[]) {
  return (await createPlatformToken(service.ctx, OPERATOR, { name: 'test', families })).token;
}

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<ApiResponse> {
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

/** A platform service client holding every family. */
async function platformClient() {
  const headers = { authorization: `Bearer ${await platformToken(['authorization', 'tapering', 'invoice'])}` };
  return { post: (path: string, body: unknown, extra: Record<string, string> = {}) => call('POST', `/api/platform/v1${path}`, { ...headers, ...extra }, body) };
}

const authorizationBody = (patientId: string) => ({ patientId, treatment: 'MRI lumbar spine', justification: 'Six weeks of pain', requestedAt: '2026-11-20T10:00:00Z' });
const taperingBody = (patientId: string) => ({ patientId, medication: 'oxycodone', schedule: [{ startsOn: '2026-12-01', dailyDose: 20, unit: 'mg' }, { startsOn: '2026-12-15', dailyDose: 10, unit: 'mg' }] });
const invoiceBody = { number: 'INV-2026-11', amountMinor: 1_234_500, currency: 'USD', period: { start: '2026-10-01', end: '2026-10-31' } };

/** A tenant subscribed to `events` at its own receiver path; the deliveries there are its. */
async function subscribedTenant(events: string[]) {
  const tenant = await service.createTenant();
  const api = apiClient(service, tenant);
  const path = `/${tenant.employerId}`;
  const { secret } = await subscribe(api, `${receiver.url}${path}`, { events });
  const deliveries = () => receiver.requests.filter((request) => request.path === path);
  /** Waits for a delivery of `event`, checks its signature and its data against the published schema, and returns the body. */
  const delivered = async (event: keyof typeof webhookDataSchemas) => {
    const request = await waitUntil(`${event} delivery`, () => deliveries().find((candidate) => candidate.headers['x-webhook-event'] === event));
    expect(await verify(secret, request.body, String(request.headers['x-webhook-signature']))).toBe(true);
    const body = JSON.parse(request.body);
    expect(body).toMatchObject({ id: request.headers['x-webhook-id'], event, employerId: tenant.employerId });
    return { ...body, data: webhookDataSchemas[event].strict().parse(body.data) };
  };
  return { tenant, api, deliveries, delivered };
}

describe('each webhook event type is produced by a real operation and delivered signed', () => {
  it('authorization.reviewed: the platform submits a request, the employer reviews it once', async () => {
    const { tenant, api, delivered } = await subscribedTenant(['authorization.reviewed']);
    const platform = await platformClient();
    const patientId = await addPatient(service, tenant);
    const submitted = await platform.post(`/employers/${tenant.employerId}/authorizations`, authorizationBody(patientId));
    expect(submitted.status).toBe(201);
    expect(submitted.body).toMatchObject({ patientId, status: 'pending', review: null, requestedAt: '2026-11-20T10:00:00.000Z' });

    const reviewed = await api.post(`/api/employer/authorizations/${submitted.body.id}/review`, { decision: 'approved', note: 'Covered under plan B' });
    expect(reviewed.status).toBe(200);
    expect(reviewed.body).toMatchObject({ status: 'approved', review: { decision: 'approved', note: 'Covered under plan B', reviewedBy: tenant.adminUserId } });
    const again = await api.post(`/api/employer/authorizations/${submitted.body.id}/review`, { decision: 'denied' });
    expect(again).toMatchObject({ status: 409, body: { code: 'ALREADY_REVIEWED', requestId: expect.any(String) } });

    const audit = await service.ctx.db.pg.query('SELECT action, actor_type, target_id FROM audit_log WHERE employer_id = $1 AND target_type = $2 ORDER BY global_position', [tenant.employerId, 'authorization']);
    expect(audit.rows).toEqual([
      { action: 'authorization.request', actor_type: 'platformToken', target_id: submitted.body.id },
      { action: 'authorization.review', actor_type: 'user', target_id: submitted.body.id },
    ]);
    const body = await delivered('authorization.reviewed');
    expect(body.data).toEqual({ authorizationId: submitted.body.id, patientId, decision: 'approved', note: 'Covered under plan B', reviewedBy: tenant.adminUserId, reviewedAt: reviewed.body.review.reviewedAt });
  });

  it('tapering.proposed, tapering.approved and tapering.declined: the platform reports proposals and outcomes', async () => {
    const { tenant, api, delivered, deliveries } = await subscribedTenant(['tapering.proposed', 'tapering.approved', 'tapering.declined']);
    const platform = await platformClient();
    const patientId = await addPatient(service, tenant);
    const first = await platform.post(`/employers/${tenant.employerId}/tapering-proposals`, taperingBody(patientId));
    expect(first).toMatchObject({ status: 201, body: { status: 'proposed', patientId, medication: 'oxycodone' } });
    const proposed = await delivered('tapering.proposed');
    expect(proposed.data).toMatchObject({ proposalId: first.body.id, patientId, schedule: taperingBody(patientId).schedule });

    const approve = await platform.post(`/employers/${tenant.employerId}/tapering-proposals/${first.body.id}/decision`, { decision: 'approved' });
    expect(approve).toMatchObject({ status: 200, body: { status: 'approved', reason: null } });
    expect((await delivered('tapering.approved')).data).toMatchObject({ proposalId: first.body.id, patientId, reason: null });
    // Illegal transition: a decided proposal stays decided.
    const illegal = await platform.post(`/employers/${tenant.employerId}/tapering-proposals/${first.body.id}/decision`, { decision: 'declined' });
    expect(illegal).toMatchObject({ status: 409, body: { code: 'ILLEGAL_TRANSITION' } });

    const second = await platform.post(`/employers/${tenant.employerId}/tapering-proposals`, taperingBody(patientId));
    await platform.post(`/employers/${tenant.employerId}/tapering-proposals/${second.body.id}/decision`, { decision: 'declined', reason: 'Patient prefers current dose' });
    expect((await delivered('tapering.declined')).data).toMatchObject({ proposalId: second.body.id, reason: 'Patient prefers current dose' });

    const list = await api.get('/api/employer/tapering-proposals?status=declined');
    expect(list.body.taperingProposals.map((proposal: { id: string }) => proposal.id)).toEqual([second.body.id]);
    expect((await api.get(`/api/employer/tapering-proposals/${first.body.id}`)).body.status).toBe('approved');
    // Four deliveries in all: two proposals, two outcomes.
    await waitUntil('four tapering deliveries', () => deliveries().length >= 4);
  });

  it('invoice.paid: the platform reports an invoice issued, then paid once', async () => {
    const { tenant, api, delivered } = await subscribedTenant(['invoice.paid']);
    const platform = await platformClient();
    const issued = await platform.post(`/employers/${tenant.employerId}/invoices`, invoiceBody, { 'idempotency-key': 'inv-2026-11' });
    // The billing service retries with the same key: the same invoice, not a second one.
    const retried = await platform.post(`/employers/${tenant.employerId}/invoices`, invoiceBody, { 'idempotency-key': 'inv-2026-11' });
    expect(retried.body.id).toBe(issued.body.id);
    expect(issued).toMatchObject({ status: 201, body: { number: 'INV-2026-11', amountMinor: 1_234_500, currency: 'USD', status: 'issued', period: invoiceBody.period } });
    const paid = await platform.post(`/employers/${tenant.employerId}/invoices/${issued.body.id}/payments`, { paidAt: '2026-11-21T08:00:00Z' });
    expect(paid).toMatchObject({ status: 200, body: { status: 'paid', paidAt: '2026-11-21T08:00:00.000Z' } });
    const twice = await platform.post(`/employers/${tenant.employerId}/invoices/${issued.body.id}/payments`, { paidAt: '2026-11-22T08:00:00Z' });
    expect(twice).toMatchObject({ status: 409, body: { code: 'ALREADY_PAID' } });

    expect((await delivered('invoice.paid')).data).toEqual({
      invoiceId: issued.body.id, number: 'INV-2026-11', amountMinor: 1_234_500, currency: 'USD', period: invoiceBody.period, paidAt: '2026-11-21T08:00:00.000Z',
    });
    const list = await api.get('/api/employer/invoices');
    expect(list.body.invoices).toEqual([paid.body]);
  });

  it('simulation.completed: a worker job projects costs over one cohort, deterministically', async () => {
    const { tenant, api, delivered } = await subscribedTenant(['simulation.completed']);
    const { cohortId } = await addPatients(service, tenant, 10);
    await addPatients(service, tenant, 1); // another cohort of the employer, not counted
    const input = { cohortId, months: 3, adoptionRate: 0.5, baselineMonthlyCostMinor: 10_000, taperedMonthlyCostMinor: 4_000, currency: 'USD' };
    const started = await call('POST', '/api/employer/simulations', { ...service.sessionHeaders(tenant.cookie), 'idempotency-key': 'sim-1' }, input);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ status: expect.stringMatching(/running|completed/), input });
    const replay = await call('POST', '/api/employer/simulations', { ...service.sessionHeaders(tenant.cookie), 'idempotency-key': 'sim-1' }, input);
    expect(replay.body.id).toBe(started.body.id);

    const done = await waitUntil('the simulation to complete', async () => {
      const current = await api.get(`/api/employer/simulations/${started.body.id}`);
      return current.body.status === 'completed' && current.body;
    });
    expect(done.months.map((month: { participants: number }) => month.participants)).toEqual([1, 3, 5]);
    expect(done.totals).toEqual({ members: 10, baselineCostMinor: 300_000, projectedCostMinor: 246_000, savingsMinor: 54_000 });
    expect((await delivered('simulation.completed')).data).toMatchObject({ simulationId: started.body.id, cohortId, months: 3, currency: 'USD', totals: done.totals });
  });

  it('test.ping validates against its schema too; unsubscribed types are not delivered', async () => {
    const { tenant, api, delivered, deliveries } = await subscribedTenant(['test.ping', 'invoice.paid']);
    const platform = await platformClient();
    const patientId = await addPatient(service, tenant);
    // tapering.proposed is not subscribed: once its fan-out job has run, no delivery of it exists.
    const proposal = await platform.post(`/employers/${tenant.employerId}/tapering-proposals`, taperingBody(patientId));
    const [proposed] = await service.ctx.eventStore.readStream(`tenant-${tenant.employerId}.tapering-${proposal.body.id}`);
    expect(await service.ctx.waitForReadModels(proposed!.position, ['job-dispatcher'])).toBe(true);
    await waitUntil('the fan-out of tapering.proposed to run', async () => {
      const { rows } = await service.ctx.db.pg.query('SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE key = $1', [`webhooks-fan-out:${proposed!.eventId}`]);
      return rows[0].n === 0;
    });
    const webhooks = await api.get('/api/employer/webhooks');
    await api.post(`/api/employer/webhooks/${webhooks.body.webhooks[0].id}/ping`);
    await delivered('test.ping');
    const issued = await platform.post(`/employers/${tenant.employerId}/invoices`, invoiceBody);
    await platform.post(`/employers/${tenant.employerId}/invoices/${issued.body.id}/payments`, { paidAt: '2026-11-21T08:00:00Z' });
    await delivered('invoice.paid');
    expect(deliveries().map((request) => request.headers['x-webhook-event']).sort()).toEqual(['invoice.paid', 'test.ping']);
  });

  it('lists every event type\'s data schema under OpenAPI webhooks', async () => {
    const document = (await call('GET', '/api/openapi', {})).body;
    expect(Object.keys(document.webhooks).sort()).toEqual(Object.keys(webhookDataSchemas).sort());
    expect(document.components.schemas.AuthorizationReviewedData.required).toEqual(expect.arrayContaining(['authorizationId', 'decision', 'reviewedAt']));
  });
});

describe('scopes', () => {
  it('authorization:read, authorization:write and simulate:run are each required where stated', async () => {
    const tenant = await service.createTenant();
    const platform = await platformClient();
    const patientId = await addPatient(service, tenant);
    const submitted = await platform.post(`/employers/${tenant.employerId}/authorizations`, authorizationBody(patientId));
    const keyWith = async (scopes: Scope[]) => keyHeaders((await createApiKey(service, tenant, { scopes })).rawKey);
    const reader = await keyWith(['authorization:read']);
    const writer = await keyWith(['authorization:write']);
    const simulator = await keyWith(['simulate:run']);
    const refused = (response: ApiResponse, scope: string) => expect(response).toMatchObject({ status: 403, body: { code: 'INSUFFICIENT_SCOPE', requiredScopes: [scope] } });
    const simulation = { months: 12, adoptionRate: 0.3, baselineMonthlyCostMinor: 500, taperedMonthlyCostMinor: 200, currency: 'EUR' };

    expect((await call('GET', '/api/employer/authorizations', reader)).body.authorizations.map((a: { id: string }) => a.id)).toEqual([submitted.body.id]);
    expect((await call('GET', `/api/employer/authorizations/${submitted.body.id}`, reader)).status).toBe(200);
    expect((await call('GET', '/api/employer/tapering-proposals', reader)).status).toBe(200);
    refused(await call('POST', `/api/employer/authorizations/${submitted.body.id}/review`, reader, { decision: 'denied' }), 'authorization:write');
    refused(await call('GET', '/api/employer/authorizations', writer), 'authorization:read');
    refused(await call('GET', '/api/employer/tapering-proposals', simulator), 'authorization:read');
    refused(await call('POST', '/api/employer/simulations', reader, simulation), 'simulate:run');
    refused(await call('GET', '/api/employer/simulations/sim_x', writer), 'simulate:run');
    expect((await call('POST', `/api/employer/authorizations/${submitted.body.id}/review`, writer, { decision: 'denied' })).status).toBe(200);
    const started = await call('POST', '/api/employer/simulations', simulator, simulation);
    expect(started.status).toBe(202);
    expect((await call('GET', `/api/employer/simulations/${started.body.id}`, simulator)).status).toBe(200);
    // Invoices: an admin's browser session only.
    expect((await call('GET', '/api/employer/invoices', simulator)).body.code).toBe('SESSION_REQUIRED');
  });

  it('bad simulation inputs are 400 naming the field, and change nothing', async () => {
    const tenant = await service.createTenant();
    const api = apiClient(service, tenant);
    const valid = { months: 12, adoptionRate: 0.3, baselineMonthlyCostMinor: 500, taperedMonthlyCostMinor: 200, currency: 'EUR' };
    for (const [field, value] of [['months', 37], ['months', 0], ['adoptionRate', 1.5], ['baselineMonthlyCostMinor', -1], ['currency', 'eur'], ['taperedMonthlyCostMinor', 1.5]] as const) {
      const response = await api.post('/api/employer/simulations', { ...valid, [field]: value });
      expect(response).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR', errors: [expect.objectContaining({ path: `body.${field}` })] } });
    }
    const simulations = await service.ctx.db.slonik.oneFirst(sql.unsafe`SELECT count(*)::int FROM simulations WHERE employer_id = ${tenant.employerId}`);
    expect(simulations).toBe(0);
  });
});

describe('platform tokens', () => {
  it('need the route\'s family (403), stop at revocation (401), and never meet employer credentials', async () => {
    const tenant = await service.createTenant();
    const patientId = await addPatient(service, tenant);
    const billing = await createPlatformToken(service.ctx, OPERATOR, { name: 'billing', families: ['invoice'] });
    const bearer = { authorization: `Bearer ${billing.token}` };
    const submit = (headers: Record<string, string>) => call('POST', `/api/platform/v1/employers/${tenant.employerId}/authorizations`, headers, authorizationBody(patientId));

    expect(await submit(bearer)).toMatchObject({ status: 403, body: { code: 'PLATFORM_FAMILY_NOT_ALLOWED', requiredFamily: 'authorization' } });
    expect((await call('POST', `/api/platform/v1/employers/${tenant.employerId}/invoices`, bearer, invoiceBody)).status).toBe(201);

    // Employer credentials on platform routes: an admin session, an API key holding every scope.
    const key = keyHeaders((await createApiKey(service, tenant, { scopes: ['authorization:read', 'authorization:write', 'simulate:run'] })).rawKey);
    expect(await submit(key)).toMatchObject({ status: 401, body: { code: 'PLATFORM_TOKEN_REQUIRED' } });
    expect(await submit(service.sessionHeaders(tenant.cookie))).toMatchObject({ status: 401, body: { code: 'PLATFORM_TOKEN_REQUIRED' } });
    expect(await submit({ authorization: `Bearer ${key['x-api-key']}` })).toMatchObject({ status: 401, body: { code: 'INVALID_PLATFORM_TOKEN' } });
    // A platform token on employer routes.
    const everything = { authorization: `Bearer ${await platformToken(['authorization', 'tapering', 'invoice'])}` };
    expect(await call('GET', '/api/employer/authorizations', everything)).toMatchObject({ status: 401, body: { code: 'AUTHENTICATION_REQUIRED' } });
    expect((await call('GET', '/api/employer/invoices', everything)).status).toBe(401);

    await revokePlatformToken(service.ctx, OPERATOR, { tokenId: billing.id });
    expect(await call('POST', `/api/platform/v1/employers/${tenant.employerId}/invoices`, bearer, invoiceBody)).toMatchObject({ status: 401, body: { code: 'PLATFORM_TOKEN_REVOKED' } });
    // Only the hash is stored.
    const stored = await service.ctx.db.slonik.query(sql.unsafe`SELECT * FROM platform_tokens WHERE id = ${billing.id}`);
    const events = await service.ctx.eventStore.readStream(`system.platformToken-${billing.id}`);
    expect(stored.rows).toHaveLength(1);
    expect(events.map((event) => event.type)).toEqual(['PlatformTokenCreated', 'PlatformTokenRevoked']);
    expect(JSON.stringify([stored.rows, events.map((event) => event.data)])).not.toContain(billing.token);
  });
});

describe('tenant isolation', () => {
  it('another employer\'s ids are 404, a patient of another employer is 400, an unknown employer 404', async () => {
    const [alpha, beta] = [await service.createTenant(), await service.createTenant()];
    const platform = await platformClient();
    const alphaPatient = await addPatient(service, alpha);
    const submitted = await platform.post(`/employers/${alpha.employerId}/authorizations`, authorizationBody(alphaPatient));
    const proposal = await platform.post(`/employers/${alpha.employerId}/tapering-proposals`, taperingBody(alphaPatient));
    const invoice = await platform.post(`/employers/${alpha.employerId}/invoices`, invoiceBody);
    const betaApi = apiClient(service, beta);

    expect(await platform.post(`/employers/${beta.employerId}/authorizations`, authorizationBody(alphaPatient))).toMatchObject({ status: 400, body: { code: 'UNKNOWN_PATIENT' } });
    expect((await platform.post(`/employers/${beta.employerId}/tapering-proposals`, taperingBody(alphaPatient))).status).toBe(400);
    expect((await platform.post('/employers/emp_nobody/invoices', invoiceBody)).status).toBe(404);
    expect((await betaApi.get(`/api/employer/authorizations/${submitted.body.id}`)).status).toBe(404);
    expect((await betaApi.post(`/api/employer/authorizations/${submitted.body.id}/review`, { decision: 'approved' })).status).toBe(404);
    expect((await betaApi.get(`/api/employer/tapering-proposals/${proposal.body.id}`)).status).toBe(404);
    expect((await platform.post(`/employers/${beta.employerId}/tapering-proposals/${proposal.body.id}/decision`, { decision: 'approved' })).status).toBe(404);
    expect((await platform.post(`/employers/${beta.employerId}/invoices/${invoice.body.id}/payments`, { paidAt: '2026-11-21T08:00:00Z' })).status).toBe(404);
    expect((await betaApi.get('/api/employer/authorizations')).body.authorizations).toEqual([]);
    expect((await betaApi.get('/api/employer/invoices')).body.invoices).toEqual([]);
    // Alpha's own are untouched and audited.
    expect((await apiClient(service, alpha).get(`/api/employer/authorizations/${submitted.body.id}`)).body.status).toBe('pending');
  });
});
