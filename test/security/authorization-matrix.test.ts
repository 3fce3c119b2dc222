// The authorization matrix: every operation of the service's own /api/openapi, called as every kind of
// caller, with the expected answer derived from the operation's declared authorization (`security`,
// `x-required-scope`, `x-roles`, `x-platform-family`, written by defineRoute from the route's `auth`).
// A new route is in the document, so it is in the matrix; a new public route (which declares nothing)
// fails until its expectation is written in PUBLIC_ROUTES below.
//
// Callers: anonymous; this tenant's PATIENT session, admin session, API key with the route's scope and
// one with every other scope, SCIM token; platform tokens with and without the route's family; the
// cron secret; and the same credentials of another tenant, sent against this tenant's object ids (404,
// and never one of this tenant's ids in an answer). Refused callers get their exact status (401, 403);
// allowed ones a 2xx or a 400 validation answer (requests carry no body unless one is needed to reach
// the object lookup); no answer is a 5xx, and every error has its route's documented shape. A PATIENT
// session reads only its own FHIR compartment: the other patient's resources are 404.
//
// One service, one pair of tenants, objects created once; an operation that consumes its object
// (DELETE, a confirmation, a review) gets a fresh one for each allowed caller.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES, SCOPES, type Role, type Scope } from '../../src/auth/principal.ts';
import { capabilities } from '../../src/capabilities.ts';
import { createScimCapability } from '../../src/scim/capability.ts';
import { registerUser } from '../../src/tenants/commands.ts';
import { createPlatformToken, issueInvoice, proposeTapering, requestAuthorization } from '../../src/workflows/commands.ts';
import { PLATFORM_FAMILIES, type PlatformFamily } from '../../src/workflows/events.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { errorShapeProblem } from '../support/error-shapes.ts';
import { createTestIdp } from '../support/saml-idp.ts';
import { accessToken, registerSmartClient, smartClientKey, type SmartClientKey } from '../support/smart-clients.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableScim, GROUP_SCHEMA, PATCH_OP, scimClient, USER_SCHEMA, type ScimClient } from '../scim/scim-client.ts';
import { enableSaml } from '../sso/sso-test-kit.ts';
import { apiClient, waitUntil } from '../webhooks/helpers.ts';

const CRON_SECRET = 'matrix-cron-secret-0123456789abcdef';
/** Refused by connection at once: the webhook's target never answers anything. */
const UNREACHABLE_HTTPS = 'https://127.0.0.1:9/matrix';
const SCIM_PREFIX = '/api/scim/v2';

type Operation = {
  operationId: string;
  security?: Array<Record<string, unknown>>;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: unknown;
  'x-required-scope'?: Scope;
  'x-roles'?: Role[];
  'x-platform-family'?: PlatformFamily;
};
type OpenApi = { paths: Record<string, Record<string, Operation>> };
type Route = { key: string; method: string; path: string; operation: Operation };

type Kind = 'anonymous' | 'patient' | 'admin' | 'keyWithScope' | 'keyWithoutScope' | 'smartToken' | 'scim' | 'platform' | 'platformWithoutFamily' | 'cron';
/** `other`: a credential of the other tenant, sent against this tenant's ids. */
type Caller = { name: string; kind: Kind; other: boolean; headers: () => Record<string, string> };
type Expected = { status: number; codes?: string[] } | { allowed: true } | { clientError: true };

/** What a request carries besides its path parameters. */
type Extras = { body?: unknown; form?: Record<string, string>; headers?: Record<string, string> };
type Example = Extras & {
  /** The path parameter whose object the operation consumes: each allowed caller gets a fresh one. */
  fresh?: string;
};

/**
 * Bodies of operations that need one for a call to reach the object's lookup (another tenant's call
 * must meet the 404, not the 400 of a missing body), and the objects they consume. Operations with
 * path parameters and a request body must be listed (the test says so); DELETEs consume their last
 * path parameter's object without being listed.
 */
const EXAMPLES: Record<string, (ids: Ids) => Example> = {
  'PATCH /api/employer/api-keys/{keyId}': () => ({ body: { name: 'renamed by the matrix' } }),
  'PATCH /api/employer/webhooks/{webhookId}': () => ({ body: { description: 'patched by the matrix' } }),
  'PATCH /api/employer/audit-streams/{streamId}': () => ({ body: { name: 'renamed by the matrix' } }),
  'POST /api/employer/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver': () => ({ fresh: 'deliveryId' }),
  // A key is rolled once: each allowed caller rolls a fresh one.
  'POST /api/employer/api-keys/{keyId}/roll': () => ({ body: { overlapSeconds: 60 }, fresh: 'keyId' }),
  // Without an overlap, so that every allowed caller may rotate again.
  'POST /api/employer/webhooks/{webhookId}/rotate-secret': () => ({ body: { overlapSeconds: 0 } }),
  'POST /api/employer/webhooks/{webhookId}/recover': () => ({ body: { since: '2026-01-01T00:00:00Z' } }),
  'POST /api/employer/authorizations/{authorizationId}/review': () => ({ body: { decision: 'approved' }, fresh: 'authorizationId' }),
  'POST /api/employer/sso/trust-changes/{changeId}/confirm': () => ({ fresh: 'changeId' }),
  'PUT /api/fhir/{resourceType}/{id}': (ids) => ({ body: ids.otherPatientResource, headers: { 'content-type': 'application/fhir+json' } }),
  'POST /api/platform/v1/employers/{employerId}/tapering-proposals/{proposalId}/decision': () => ({ body: { decision: 'approved' }, fresh: 'proposalId' }),
  'POST /api/platform/v1/employers/{employerId}/invoices/{invoiceId}/payments': () => ({ body: { paidAt: '2026-03-01T00:00:00Z' }, fresh: 'invoiceId' }),
  // The cohort is looked up before the kick-off's parameters (an empty Parameters body is valid).
  'POST /api/fhir/Group/{cohortId}/$export': () => ({ body: { resourceType: 'Parameters' } }),
  'PUT /api/employer/smart-clients/{clientId}/keys': () => ({ body: { jwks: { keys: [matrixSmartKey.publicJwk] } } }),
};

/** A public key for SMART client bodies. */
let matrixSmartKey: SmartClientKey;

/**
 * Public routes authenticate themselves or need nothing, so their answers are written here: a public
 * route missing from this table fails the test. SCIM routes (all under /api/scim/v2, authenticated by
 * the SCIM token) follow their own rule in expectedFor.
 */
const PUBLIC_ROUTES: Record<string, { extras?: (ids: Ids) => Extras; expect: (caller: Caller) => Expected }> = {
  // No token: a validation answer, whoever calls.
  'GET /api/auth/signin': { expect: () => ({ clientError: true }) },
  // No token in the form (and no Origin of ours): refused, whoever posts it.
  'POST /api/auth/signin': { expect: () => ({ clientError: true }) },
  'GET /api/auth/saml/start/{employerId}': { expect: () => ({ status: 302 }) },
  // A response that is not SAML is refused, whoever posts it.
  'POST /api/auth/saml/callback/{employerId}': { extras: () => ({ form: { SAMLResponse: Buffer.from('<not-saml/>').toString('base64') } }), expect: () => ({ clientError: true }) },
  'GET /api/auth/saml/metadata/{employerId}': { expect: () => ({ status: 200 }) },
  // No LogoutRequest in the query: refused, whoever calls (a signed one from the IdP ends that user's sessions).
  'GET /api/auth/saml/logout/{employerId}': { expect: () => ({ clientError: true }) },
  'GET /api/audit/public-key': { expect: () => ({ status: 200 }) },
  // Anonymous; a key presented is checked as on every key route (a key of any scope here: fhir:read is what it must hold).
  'GET /api/fhir/metadata': { expect: () => ({ status: 200 }) },
  'GET /api/fhir/.well-known/smart-configuration': { expect: () => ({ status: 200 }) },
  // No assertion in the form: an OAuth error, whoever posts.
  'POST /api/oauth/token': { expect: () => ({ clientError: true }) },
};

/**
 * Every operation a PATIENT session may call: its own session, and FHIR reads, which its compartment
 * confines (src/patients/fhir/compartment.ts). Opening another route to patients means adding it here.
 */
const PATIENT_OPERATIONS = [
  'GET /api/auth/session',
  'POST /api/auth/logout',
  // Signing out at the IdP too (SAML Single Logout): its own session only.
  'POST /api/auth/saml/logout',
  'GET /api/fhir/{resourceType}',
  'POST /api/fhir/{resourceType}/_search',
  'GET /api/fhir/{resourceType}/{id}',
  'GET /api/fhir/{resourceType}/{id}/_history/{versionId}',
  'GET /api/fhir/Patient/{id}/$everything',
  'GET /api/fhir/{resourceType}/{id}/_history',
  'GET /api/fhir/{resourceType}/_history',
];

function cronExpectation(caller: Caller): Expected {
  return caller.kind === 'cron' ? { status: 200 } : { status: 401, codes: ['UNAUTHORIZED'] };
}

/** Ids of this tenant's objects, shared by the calls that only read or change them. */
type Ids = {
  employerId: string;
  otherEmployerId: string;
  keyId: string;
  webhookId: string;
  deliveryId: string;
  cohortId: string;
  ownPatientId: string;
  otherPatientId: string;
  otherPatientResource: Record<string, unknown>;
  ownObservationId: string;
  otherObservationId: string;
  authorizationId: string;
  proposalId: string;
  invoiceId: string;
  simulationId: string;
  csvExportId: string;
  bulkExportId: string;
  bulkFileName: string;
  scimUserId: string;
  scimGroupId: string;
  domain: string;
  clientId: string;
  recoveryId: string;
  streamId: string;
};

const AUTH_REQUIRED = { status: 401, codes: ['AUTHENTICATION_REQUIRED'] };

/** Path parameters that name an object of a tenant (another tenant's call on them is 404). */
const objectParams = (route: Route) => (route.operation.parameters ?? []).filter((parameter) => parameter.in === 'path' && !['resourceType', 'employerId'].includes(parameter.name) && !(route.path.startsWith(`${SCIM_PREFIX}/`) && parameter.name === 'id'));
const modesOf = (operation: Operation) => new Set((operation.security ?? []).flatMap((requirement) => Object.keys(requirement)));
const isScim = (route: Route) => route.path.startsWith(SCIM_PREFIX);
const isFhirDelete = (route: Route) => route.key === 'DELETE /api/fhir/{resourceType}/{id}';
const isPublic = (route: Route) => (route.operation.security ?? []).length === 0;

/** The answer a caller must get, from the route's declared authorization. */
function expectedFor(route: Route, caller: Caller): Expected {
  const { operation } = route;
  const foreignObject = caller.other && objectParams(route).length > 0;
  if (isScim(route)) {
    if (caller.kind !== 'scim') return { status: 401 };
    return foreignObject ? { status: 404 } : { allowed: true };
  }
  if (isPublic(route)) return PUBLIC_ROUTES[route.key]!.expect(caller);
  if (modesOf(operation).has('cronSecret')) return cronExpectation(caller);
  const family = operation['x-platform-family'];
  if (family) {
    if (caller.kind === 'platformWithoutFamily') return { status: 403, codes: ['PLATFORM_FAMILY_NOT_ALLOWED'] };
    if (caller.kind === 'platform') return foreignObject ? { status: 404 } : { allowed: true };
    if (caller.kind === 'scim' || caller.kind === 'cron' || caller.kind === 'smartToken') return { status: 401, codes: ['INVALID_PLATFORM_TOKEN'] };
    return { status: 401, codes: ['PLATFORM_TOKEN_REQUIRED'] };
  }
  const modes = modesOf(operation);
  const roles = operation['x-roles'];
  switch (caller.kind) {
    case 'patient':
    case 'admin':
      if (!roles) return AUTH_REQUIRED;
      if (!roles.includes(caller.kind === 'admin' ? 'EMPLOYER_ADMIN' : 'PATIENT')) return { status: 403, codes: ['FORBIDDEN_ROLE', 'INSUFFICIENT_SCOPE'] };
      break;
    case 'keyWithScope':
      if (!modes.has('apiKey')) return { status: 403, codes: ['SESSION_REQUIRED'] };
      break;
    case 'keyWithoutScope':
      return { status: 403, codes: [modes.has('apiKey') ? 'INSUFFICIENT_SCOPE' : 'SESSION_REQUIRED'] };
    case 'smartToken':
      if (!modes.has('smartToken')) return AUTH_REQUIRED;
      break;
    default:
      return AUTH_REQUIRED;
  }
  if (foreignObject) return { status: 404 };
  // A patient's FHIR reads by id name the other patient's resources: outside its compartment.
  if (caller.kind === 'patient' && route.path.startsWith('/api/fhir/') && (operation.parameters ?? []).some((parameter) => parameter.name === 'id')) return { status: 404 };
  return { allowed: true };
}

describe('the authorization matrix', () => {
  let service: TestService;
  let dns: TestDnsServer;
  let document: OpenApi;
  let routes: Route[];
  let ids: Ids;
  /** This tenant's ids and names of its patients' data: no caller of the other tenant may see one. */
  let tenantSecrets: string[];
  let callersOf: (route: Route) => Caller[];
  let freshObject: (param: string) => Promise<string>;
  let renewSessions: () => Promise<void>;
  let patientHeaders: () => Record<string, string>;

  beforeAll(async () => {
    dns = await startDnsServer();
    service = await startTestService({
      env: {
        API_KEY_RATE_LIMIT_PER_MIN: '1000000', FHIR_RATE_LIMIT_PER_MIN: '1000000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CRON_SECRET,
        EMAIL_DOMAIN_DNS_SERVERS: dns.address,
        // Every allowed caller starts work of each kind: the per-employer limits of work in flight are another test's.
        EXPORT_CSV_MAX_IN_FLIGHT: '1000', SIMULATION_MAX_IN_FLIGHT: '1000', WEBHOOK_REQUESTED_DELIVERIES_MAX_IN_FLIGHT: '1000',
      },
      // Unauthenticated SCIM calls are many here: the failed-authentication limit would answer them 429.
      capabilities: capabilities.map((capability) =>
        capability.name === 'scim' ? createScimCapability({ rateLimits: { perToken: { perSecond: 100_000, burst: 100_000 }, failedAuthPerAddress: { perSecond: 100_000, burst: 100_000 } } }) : capability,
      ),
    });
    const idp = await createTestIdp();

    /** A tenant's credentials: sessions, a key per scope (and one per scope lacking it), a SCIM token. */
    const tenantCredentials = async (label: string) => {
      const tenant = await service.createTenant();
      await enableSaml(service, tenant, idp);
      const admin = apiClient(service, tenant);
      const stamp = randomUUID();
      const emails = [`own.${stamp}@example.test`, `other.${stamp}@example.test`];
      const upload = await admin.post('/api/employer/upload-cohort', { patients: emails.map((email, index) => ({ email, firstName: `${label}${index}`, lastName: 'Member' })) });
      expect(upload.status).toBe(201);
      const roster = (await admin.get('/api/employer/patients?limit=10')).body.patients as Array<{ id: string; email: string }>;
      const [ownPatientId, otherPatientId] = emails.map((email) => roster.find((patient) => patient.email === email)!.id) as [string, string];
      // The patient's own user (as SCIM or SAML provisions it): its session reads its compartment only.
      const { userId: patientUserId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
        employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim',
        profile: { email: emails[0]!, userName: emails[0]!, givenName: null, familyName: null, displayName: null, externalId: null },
      });
      // The callers' own sessions (one may sign out); set-up and fresh objects use the tenant's first one.
      const sessions = { admin: await service.signIn(tenant.employerId, tenant.adminUserId), patient: await service.signIn(tenant.employerId, patientUserId) };
      const keys = { all: '', with: {} as Record<string, string>, without: {} as Record<string, string> };
      keys.all = (await createApiKey(service, tenant, { scopes: [...SCOPES], name: `${label} every scope` })).rawKey;
      for (const scope of SCOPES) {
        keys.with[scope] = (await createApiKey(service, tenant, { scopes: [scope], name: `${label} ${scope}` })).rawKey;
        keys.without[scope] = (await createApiKey(service, tenant, { scopes: SCOPES.filter((other) => other !== scope), name: `${label} all but ${scope}` })).rawKey;
      }
      const scimToken = await enableScim(service, tenant);
      return { tenant, admin, sessions, patientUserId, keys, scimToken, ownPatientId, otherPatientId, cohortId: String(upload.body.cohortId) };
    };
    matrixSmartKey = await smartClientKey();
    const a = await tenantCredentials('A');
    const b = await tenantCredentials('B');

    // Platform service tokens: every family, and each family alone.
    const system = { tenantId: null, actor: { type: 'system', id: 'test' } } as const;
    const platformTokens = {
      all: (await createPlatformToken(service.ctx, system, { name: 'matrix: every family', families: [...PLATFORM_FAMILIES] })).token,
      allBut: Object.fromEntries(await Promise.all(PLATFORM_FAMILIES.map(async (family) =>
        [family, (await createPlatformToken(service.ctx, system, { name: `matrix: all but ${family}`, families: PLATFORM_FAMILIES.filter((other) => other !== family) })).token]))) as Record<PlatformFamily, string>,
    };
    const platformContext = { tenantId: a.tenant.employerId, actor: { type: 'platformToken', id: 'matrix' } } as const;

    // This tenant's objects.
    const fhir = (method: string, path: string, body?: unknown) =>
      fetch(`${service.url}/api/fhir${path}`, { method, headers: { ...keyHeaders(a.keys.all), 'content-type': 'application/fhir+json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const observation = async (patientId: string) =>
      String(((await (await fhir('POST', '/Observation', { resourceType: 'Observation', status: 'final', code: { text: 'BMI' }, subject: { reference: `Patient/${patientId}` } })).json()) as { id: string }).id);
    const { meta: _meta, ...otherPatientResource } = (await (await fhir('GET', `/Patient/${a.otherPatientId}`)).json()) as Record<string, unknown>;
    const webhook = await a.admin.post('/api/employer/webhooks', { url: UNREACHABLE_HTTPS, events: ['test.ping'] });
    const webhookId = String(webhook.body.id);
    const auditStream = async () => String((await a.admin.post('/api/employer/audit-streams', { name: 'matrix', preset: 'ndjson', url: UNREACHABLE_HTTPS })).body.id);
    const testDelivery = async () => String((await a.admin.post(`/api/employer/webhooks/${webhookId}/test`)).body.deliveryId);
    const csv = await a.admin.post('/api/employer/export/csv');
    await waitUntil('the CSV export', async () => (await a.admin.get(`/api/employer/export/csv/exports/${csv.body.exportId}`)).body.status === 'completed');
    const kickOffBulk = async () => {
      const response = await fetch(`${service.url}/api/fhir/$export?_type=Patient`, { headers: { ...keyHeaders(a.keys.all), prefer: 'respond-async' } });
      expect(response.status).toBe(202);
      return response.headers.get('content-location')!.split('/').pop()!;
    };
    const bulkExportId = await kickOffBulk();
    const manifest = await waitUntil('the bulk export', async () => {
      const status = await fetch(`${service.url}/api/fhir/bulk-export/${bulkExportId}`, { headers: keyHeaders(a.keys.all) });
      return status.status === 200 && ((await status.json()) as { output: Array<{ url: string }> });
    });
    const simulation = await a.admin.post('/api/employer/simulations', { months: 3, adoptionRate: 0.5, baselineMonthlyCostMinor: 1000, taperedMonthlyCostMinor: 500, currency: 'EUR' });
    // Read at each use: rotating the SCIM token is among the operations tried (renewSessions renews it).
    const scim: Pick<ScimClient, 'request'> = { request: (...args) => scimClient(service, a.scimToken).request(...args) };
    const scimUser = async () => String((await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: `scim.${randomUUID()}@example.test` })).body.id);
    const scimUserId = await scimUser();
    const scimGroup = async () => String((await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: `Group ${randomUUID()}`, members: [{ value: scimUserId }] })).body.id);
    const authorization = async () => (await requestAuthorization(service.ctx, platformContext, { patientId: a.otherPatientId, treatment: 'drug X', justification: 'matrix', requestedAt: '2026-02-01T00:00:00Z' })).authorizationId;
    const proposal = async () => (await proposeTapering(service.ctx, platformContext, { patientId: a.otherPatientId, medication: 'drug X', schedule: [{ startsOn: '2026-03-01', dailyDose: 10, unit: 'mg' }] })).proposalId;
    const invoice = async () => (await issueInvoice(service.ctx, platformContext, { number: `INV-${randomUUID()}`, amountMinor: 100, currency: 'EUR', periodStart: '2026-01-01', periodEnd: '2026-01-31' })).invoiceId;
    const ssoKey = a.keys.with['sso:manage']!;
    /** A SAML trust change proposed by a key (a harmless one: the e-mail attribute), pending until confirmed. */
    const trustChange = async () => {
      const response = await fetch(`${service.url}/api/employer/sso`, { method: 'POST', headers: { ...keyHeaders(ssoKey), 'content-type': 'application/json' }, body: JSON.stringify({ samlEmailAttribute: `attribute-${randomUUID()}` }) });
      expect(response.status).toBe(202);
      return String(((await response.json()) as { pendingTrustChange: { changeId: string } }).pendingTrustChange.changeId);
    };

    /** An e-mail domain this tenant claimed, its TXT record published: an allowed caller's verification succeeds. */
    const domainClaim = async () => {
      const domain = `matrix-${randomUUID()}.example.test`;
      const claim = await a.admin.post('/api/employer/email-domains', { domain });
      expect(claim.status).toBe(201);
      dns.setTxt(claim.body.txtRecord.name, [claim.body.txtRecord.value]);
      return domain;
    };

    ids = {
      employerId: a.tenant.employerId,
      otherEmployerId: b.tenant.employerId,
      keyId: (await createApiKey(service, a.tenant, { scopes: ['webhook:manage'], name: 'matrix victim' })).id,
      webhookId,
      deliveryId: await testDelivery(),
      cohortId: a.cohortId,
      ownPatientId: a.ownPatientId,
      otherPatientId: a.otherPatientId,
      otherPatientResource,
      ownObservationId: await observation(a.ownPatientId),
      otherObservationId: await observation(a.otherPatientId),
      authorizationId: await authorization(),
      proposalId: await proposal(),
      invoiceId: await invoice(),
      simulationId: String(simulation.body.id),
      csvExportId: String(csv.body.exportId),
      bulkExportId,
      bulkFileName: manifest.output[0]!.url.split('/').pop()!,
      scimUserId,
      scimGroupId: await scimGroup(),
      domain: await domainClaim(),
      clientId: (await registerSmartClient(service, a.tenant)).clientId,
      recoveryId: String((await a.admin.post(`/api/employer/webhooks/${webhookId}/recover`, { since: '2026-01-01T00:00:00Z' })).body.recoveryId),
      streamId: await auditStream(),
    };
    tenantSecrets = [ids.employerId, ids.keyId, ids.webhookId, ids.deliveryId, ids.cohortId, ids.ownPatientId, ids.otherPatientId, ids.ownObservationId, ids.otherObservationId,
      ids.authorizationId, ids.proposalId, ids.invoiceId, ids.simulationId, ids.csvExportId, ids.bulkExportId, ids.scimUserId, ids.scimGroupId, ids.clientId, ids.streamId];

    const factories: Record<string, () => Promise<string>> = {
      keyId: async () => (await createApiKey(service, a.tenant, { scopes: ['webhook:manage'], name: 'matrix fresh' })).id,
      webhookId: async () => String((await a.admin.post('/api/employer/webhooks', { url: UNREACHABLE_HTTPS, events: ['test.ping'] })).body.id),
      streamId: auditStream,
      deliveryId: testDelivery,
      id: async () => observation(a.otherPatientId),
      patientId: async () => {
        const email = `fresh.${randomUUID()}@example.test`;
        await a.admin.post('/api/employer/upload-cohort', { patients: [{ email, firstName: 'Fresh', lastName: 'Member' }] });
        return String((await a.admin.get(`/api/employer/patients?search=${encodeURIComponent(email)}`)).body.patients[0].id);
      },
      // Deactivated, so that both DELETEs consuming a user (SCIM's, and the erasure of a deactivated user) take one.
      userId: async () => {
        const userId = await scimUser();
        await scim.request('PATCH', `/Users/${userId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] });
        return userId;
      },
      groupId: scimGroup,
      exportId: kickOffBulk,
      changeId: trustChange,
      domain: domainClaim,
      authorizationId: authorization,
      proposalId: proposal,
      invoiceId: invoice,
      clientId: async () => (await registerSmartClient(service, a.tenant, { key: matrixSmartKey })).clientId,
    };
    // SMART access tokens of each tenant, granting every FHIR type and interaction.
    const smartTokens = {
      a: await accessToken(service, await registerSmartClient(service, a.tenant), 'system/*.cruds'),
      b: await accessToken(service, await registerSmartClient(service, b.tenant), 'system/*.cruds'),
    };
    freshObject = async (param) => {
      const factory = factories[param];
      if (!factory) throw new Error(`no factory for a fresh ${param}: add one`);
      return factory();
    };

    const sessionCallers: Array<{ cookie: () => string; renew: () => Promise<void> }> = [];
    const sessionOf = (credentials: typeof a, role: 'admin' | 'patient') => {
      let cookie = credentials.sessions[role];
      sessionCallers.push({
        cookie: () => cookie,
        renew: async () => {
          cookie = await service.signIn(credentials.tenant.employerId, role === 'admin' ? credentials.tenant.adminUserId : credentials.patientUserId);
        },
      });
      return () => service.sessionHeaders(cookie);
    };
    const sessions = { aAdmin: sessionOf(a, 'admin'), aPatient: sessionOf(a, 'patient'), bAdmin: sessionOf(b, 'admin'), bPatient: sessionOf(b, 'patient') };
    patientHeaders = sessions.aPatient;
    renewSessions = async () => {
      for (const session of sessionCallers) {
        const check = await fetch(`${service.url}/api/auth/session`, { headers: { cookie: session.cookie() } });
        if (check.status === 401) await session.renew();
      }
      // The SCIM token operations replace each tenant's token: a stopped one is replaced for the next operations.
      for (const credentials of [a, b]) {
        if ((await scimClient(service, credentials.scimToken).request('GET', '/ServiceProviderConfig')).status !== 401) continue;
        const cookie = await service.signIn(credentials.tenant.employerId, credentials.tenant.adminUserId);
        credentials.scimToken = await enableScim(service, { cookie }, { rotateScimToken: true });
      }
    };

    const bearer = (token: string) => () => ({ authorization: `Bearer ${token}` });
    callersOf = (route) => {
      const scope = route.operation['x-required-scope'];
      const family = route.operation['x-platform-family'];
      const callers: Caller[] = [
        { name: 'anonymous', kind: 'anonymous', other: false, headers: () => ({}) },
        { name: 'patient session', kind: 'patient', other: false, headers: sessions.aPatient },
        { name: 'admin session', kind: 'admin', other: false, headers: sessions.aAdmin },
        { name: `API key with ${scope ?? 'every scope'}`, kind: 'keyWithScope', other: false, headers: () => keyHeaders(scope ? a.keys.with[scope]! : a.keys.all) },
        ...(scope ? [{ name: `API key with every scope but ${scope}`, kind: 'keyWithoutScope' as const, other: false, headers: () => keyHeaders(a.keys.without[scope]!) }] : []),
        { name: 'SMART access token', kind: 'smartToken', other: false, headers: bearer(smartTokens.a) },
        { name: 'SCIM token', kind: 'scim', other: false, headers: bearer(a.scimToken) },
        { name: `platform token${family ? ` with ${family}` : ''}`, kind: 'platform', other: false, headers: bearer(platformTokens.all) },
        ...(family ? [{ name: `platform token without ${family}`, kind: 'platformWithoutFamily' as const, other: false, headers: bearer(platformTokens.allBut[family]) }] : []),
        { name: 'cron secret', kind: 'cron', other: false, headers: bearer(CRON_SECRET) },
        // The other tenant's credentials, on this tenant's ids.
        { name: "other tenant's patient session", kind: 'patient', other: true, headers: sessions.bPatient },
        { name: "other tenant's admin session", kind: 'admin', other: true, headers: sessions.bAdmin },
        { name: `other tenant's API key with ${scope ?? 'every scope'}`, kind: 'keyWithScope', other: true, headers: () => keyHeaders(scope ? b.keys.with[scope]! : b.keys.all) },
        { name: "other tenant's SMART access token", kind: 'smartToken', other: true, headers: bearer(smartTokens.b) },
        { name: "other tenant's SCIM token", kind: 'scim', other: true, headers: bearer(b.scimToken) },
        // A platform token acts for the employer in the path: the other employer's path, this one's ids.
        ...(family ? [{ name: `platform token with ${family} on the other employer`, kind: 'platform' as const, other: true, headers: bearer(platformTokens.all) }] : []),
      ];
      return callers;
    };

    document = (await (await fetch(`${service.url}/api/openapi`)).json()) as OpenApi;
    routes = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, operation })));
  }, 180_000);
  afterAll(async () => {
    await service?.stop();
    await dns?.stop();
  });

  /** The value of a path parameter for this route: this tenant's object, or (`employerId`) the caller's employer for platform routes. */
  function paramValue(route: Route, name: string, caller: Caller): string {
    switch (name) {
      case 'employerId':
        return route.operation['x-platform-family'] && caller.other ? ids.otherEmployerId : ids.employerId;
      // FHIR DELETE of a Patient erases it, for an administrator's session only: the matrix deletes Observations.
      case 'resourceType':
        return isFhirDelete(route) ? 'Observation' : 'Patient';
      case 'id':
        return route.path.startsWith(`${SCIM_PREFIX}/ResourceTypes`) ? 'User' : route.path.startsWith(`${SCIM_PREFIX}/Schemas`) ? USER_SCHEMA
          : isFhirDelete(route) ? ids.otherObservationId : ids.otherPatientId;
      case 'versionId':
        return '1';
      case 'exportId':
        return route.path.startsWith('/api/fhir/') ? ids.bulkExportId : ids.csvExportId;
      case 'fileName':
        return ids.bulkFileName;
      case 'patientId':
        return ids.otherPatientId;
      case 'userId':
        return ids.scimUserId;
      case 'groupId':
        return ids.scimGroupId;
      default: {
        const value = (ids as Record<string, unknown>)[name];
        if (typeof value !== 'string') throw new Error(`no value for the path parameter ${name} of ${route.key}: add one`);
        return value;
      }
    }
  }

  async function call(route: Route, caller: Caller, params: Record<string, string>, extras: Extras) {
    const path = route.path.replace(/\{([^}]+)\}/g, (_match, name: string) => encodeURIComponent(params[name]!));
    const body = extras.form ? new URLSearchParams(extras.form).toString() : extras.body === undefined ? undefined : JSON.stringify(extras.body);
    const contentType = extras.form ? 'application/x-www-form-urlencoded' : body === undefined ? undefined : 'application/json';
    const response = await fetch(`${service.url}${path}`, {
      method: route.method,
      redirect: 'manual',
      headers: { ...caller.headers(), ...(contentType ? { 'content-type': contentType } : {}), ...extras.headers },
      ...(body === undefined ? {} : { body }),
    });
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
  }

  /** What is wrong with an answer, or null. */
  function problemOf(route: Route, caller: Caller, expected: Expected, sent: Record<string, string>, answer: { status: number; contentType: string; text: string }): string | null {
    if (answer.status >= 500) return `${answer.status}: ${answer.text.slice(0, 200)}`;
    if (answer.status >= 400) {
      const shape = errorShapeProblem(route.path, answer.status, answer.contentType, answer.text);
      if (shape) return `${answer.status} ${shape}`;
    }
    if ('allowed' in expected) {
      if (!(answer.status < 300 || answer.status === 400)) return `expected 2xx or 400, got ${answer.status}: ${answer.text.slice(0, 200)}`;
    } else if ('clientError' in expected) {
      if (answer.status < 400 || answer.status >= 500) return `expected a 4xx, got ${answer.status}`;
    } else {
      if (answer.status !== expected.status) return `expected ${expected.status}, got ${answer.status}: ${answer.text.slice(0, 200)}`;
      const code = answer.status >= 400 && answer.contentType.includes('json') ? (JSON.parse(answer.text) as { code?: string }).code : undefined;
      if (expected.codes && code !== undefined && !expected.codes.includes(code)) return `expected code ${expected.codes.join(' or ')}, got ${code}`;
    }
    // The other tenant sees none of this tenant's objects; a patient, none of the other patient's (an
    // error may name the id the caller sent).
    const told = (secret: string) => answer.text.includes(secret) && !Object.values(sent).includes(secret);
    if (caller.other && !isPublic(route)) {
      const leaked = tenantSecrets.find(told);
      if (leaked) return `answered with this tenant's ${leaked}`;
    }
    if (caller.kind === 'patient' && !caller.other && (told(ids.otherPatientId) || told(ids.otherObservationId))) return "answered with the other patient's data";
    return null;
  }

  it("declares every operation's authorization: each public route has its expectation, each route a key may call names its scope, patients reach only their session and FHIR reads", () => {
    const publicRoutes = routes.filter((route) => isPublic(route) && !isScim(route)).map((route) => route.key);
    expect(publicRoutes.filter((key) => !PUBLIC_ROUTES[key]), 'public routes without an expectation in PUBLIC_ROUTES').toEqual([]);
    expect(Object.keys(PUBLIC_ROUTES).filter((key) => !publicRoutes.includes(key)), 'PUBLIC_ROUTES entries of no public route').toEqual([]);
    expect(routes.filter((route) => modesOf(route.operation).has('apiKey') && !route.operation['x-required-scope']).map((route) => route.key), 'key routes without a scope').toEqual([]);
    expect(routes.filter((route) => modesOf(route.operation).has('session') && !(route.operation['x-roles'] ?? []).every((role) => (ROLES as readonly string[]).includes(role))).map((route) => route.key)).toEqual([]);
    expect(routes.filter((route) => modesOf(route.operation).has('platformToken') !== Boolean(route.operation['x-platform-family'])).map((route) => route.key), 'platform routes without a family').toEqual([]);
    expect(routes.filter((route) => isScim(route) !== modesOf(route.operation).has('scimToken')).map((route) => route.key), 'SCIM routes declare the SCIM token, and only they').toEqual([]);
    expect(routes.filter((route) => route.operation['x-roles']?.includes('PATIENT')).map((route) => route.key).sort(), 'operations open to PATIENT sessions').toEqual([...PATIENT_OPERATIONS].sort());
    const needsExample = routes.filter((route) => route.operation.requestBody && objectParams(route).length > 0 && !isScim(route) && !isPublic(route));
    expect(needsExample.filter((route) => !EXAMPLES[route.key]).map((route) => route.key), 'operations on an object with a body: add an example to EXAMPLES').toEqual([]);
    expect(Object.keys(EXAMPLES).filter((key) => !routes.some((route) => route.key === key)), 'EXAMPLES entries of no operation').toEqual([]);
  });

  it('answers every operation as its declared authorization says, for every kind of caller of this tenant and of another', async () => {
    const failures: string[] = [];
    const tally = new Map<string, number>();
    for (const route of routes) {
      const example = EXAMPLES[route.key]?.(ids) ?? {};
      const extras: Extras = { ...example, ...PUBLIC_ROUTES[route.key]?.extras?.(ids) };
      const consumed = example.fresh ?? (route.method === 'DELETE' ? [...route.path.matchAll(/\{([^}]+)\}/g)].pop()?.[1] : undefined);
      // A pending trust change is replaced by the next proposal: each operation on one gets its own.
      const sharedChangeId = route.path.includes('{changeId}') ? await freshObject('changeId') : undefined;
      const callers = callersOf(route).map((caller) => ({ caller, expected: expectedFor(route, caller) }));
      // Refused and other-tenant callers first, on the shared objects; then each allowed caller, on a fresh one if the call consumes it.
      const ordered = [...callers.filter(({ expected }) => !('allowed' in expected)), ...callers.filter(({ expected }) => 'allowed' in expected)];
      for (const { caller, expected } of ordered) {
        const params = Object.fromEntries((route.operation.parameters ?? []).filter((parameter) => parameter.in === 'path')
          .map((parameter) => [parameter.name, parameter.name === 'changeId' ? sharedChangeId! : paramValue(route, parameter.name, caller)]));
        if ('allowed' in expected && consumed) params[consumed] = await freshObject(consumed);
        const answer = await call(route, caller, params, extras);
        tally.set(`${Math.floor(answer.status / 100)}xx`, (tally.get(`${Math.floor(answer.status / 100)}xx`) ?? 0) + 1);
        const problem = problemOf(route, caller, expected, params, answer);
        if (problem) failures.push(`${route.key} as ${caller.name}: ${problem}`);
      }
      if (route.method !== 'GET') await renewSessions();
    }
    console.log(`authorization matrix: ${routes.length} operations; answers ${[...tally].sort().map(([range, count]) => `${range}: ${count}`).join(', ')}`);
    expect(failures).toEqual([]);
  }, 300_000);

  it('lets a PATIENT session read its own compartment: its Patient, its resources, searches that find only them', async () => {
    const get = async (path: string) => {
      const response = await fetch(`${service.url}/api/fhir${path}`, { headers: patientHeaders() });
      return { status: response.status, body: (await response.json()) as { entry?: Array<{ resource: { id: string } }> } };
    };
    expect((await get(`/Patient/${ids.ownPatientId}`)).status).toBe(200);
    expect((await get(`/Observation/${ids.ownObservationId}`)).status).toBe(200);
    expect((await get(`/Patient/${ids.ownPatientId}/_history/1`)).status).toBe(200);
    expect((await get(`/Observation/${ids.otherObservationId}`)).status).toBe(404);
    expect((await get('/Patient')).body.entry?.map((entry) => entry.resource.id)).toEqual([ids.ownPatientId]);
    expect((await get('/Observation')).body.entry?.map((entry) => entry.resource.id)).toEqual([ids.ownObservationId]);
    expect((await get(`/Observation?subject=Patient/${ids.otherPatientId}`)).body.entry).toBeUndefined();
  });
});
