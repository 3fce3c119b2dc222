// E-mail domain claims end to end, against a real DNS server: an employer claims a domain, publishes
// the TXT record and verifies it; from then on no other employer can take up a new address in it (SCIM,
// SAML just-in-time provisioning, cohort upload, FHIR Patient, the operator's `tenants create`), and
// is told exactly what it is told for an address already in use: nothing that names an employer.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMAIL_UNAVAILABLE_MESSAGE } from '../../src/tenants/email-reservation.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { createTestDatabaseUri } from '../support/database.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableScim, scimClient, USER_SCHEMA, type ScimClient } from '../scim/scim-client.ts';
import { enableSaml, postCallback, spUrls, startLogin } from '../sso/sso-test-kit.ts';
import { apiClient, type ApiClient } from '../webhooks/helpers.ts';

const run = promisify(execFile);
const DOMAINS = '/api/employer/email-domains';
const UNAVAILABLE_SCIM = { schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '409', scimType: 'uniqueness', detail: EMAIL_UNAVAILABLE_MESSAGE };
const UNAVAILABLE_FHIR = { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'duplicate', diagnostics: EMAIL_UNAVAILABLE_MESSAGE }] };

type Employer = { employerId: string; adminUserId: string; cookie: string; api: ApiClient; scim: ScimClient };

let dns: TestDnsServer;
let idp: TestIdp;
let databaseUri: string;
let service: TestService;
let a: Employer;
let b: Employer;
let c: Employer;

async function employer(): Promise<Employer> {
  const tenant = await service.createTenant();
  const token = await enableScim(service, tenant);
  return { ...tenant, api: apiClient(service, tenant), scim: scimClient(service, token) };
}

const scimUser = (email: string) => ({ schemas: [USER_SCHEMA], userName: email, emails: [{ value: email, type: 'work', primary: true }] });
const patient = (email: string) => ({ resourceType: 'Patient', name: [{ family: 'Lovelace', given: ['Ada'] }], telecom: [{ system: 'email', value: email }] });
const cohortRow = (email: string) => ({ email, firstName: 'Ada', lastName: 'Lovelace' });
const unique = (domain: string) => `person.${randomUUID()}@${domain}`;
const freshDomain = (label: string) => `${label}-${randomUUID().slice(0, 8)}.test`;

/** POST /api/fhir/Patient in the employer's admin session: the status and the body. */
async function createPatient(who: Employer, email: string) {
  const response = await fetch(`${service.url}/api/fhir/Patient`, {
    method: 'POST',
    headers: { ...service.sessionHeaders(who.cookie), 'content-type': 'application/fhir+json' },
    body: JSON.stringify(patient(email)),
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

/** The employer's admin claims `domain`, publishes the TXT record it is given, and verifies it. */
async function claimAndVerify(who: Employer, domain: string) {
  const claim = await who.api.post(DOMAINS, { domain });
  expect(claim.status).toBe(201);
  dns.setTxt(claim.body.txtRecord.name, [claim.body.txtRecord.value]);
  const verified = await who.api.post(`${DOMAINS}/${domain}/verify`);
  expect(verified).toMatchObject({ status: 200, body: { status: 'verified' } });
  return verified.body;
}

/** What the SAML callback answers when the employer's IdP asserts `email` (a just-in-time provisioning). */
async function samlLogin(who: Employer, email: string) {
  const { requestId } = await startLogin(service, who.employerId);
  const answer = await postCallback(service, who.employerId, idp.craftResponse({ requestId: requestId!, ...spUrls(service, who.employerId), email }));
  const { requestId: _requestId, ...body } = answer.body ?? {};
  return { status: answer.status, body };
}

/** An error body without its requestId, which differs between any two requests. */
const withoutRequestId = ({ requestId: _requestId, ...rest }: Record<string, unknown>) => rest;

beforeAll(async () => {
  dns = await startDnsServer();
  idp = await createTestIdp();
  databaseUri = await createTestDatabaseUri();
  service = await startTestService({ databaseUri, env: { EMAIL_DOMAIN_DNS_SERVERS: dns.address, EMAIL_DOMAIN_DNS_TIMEOUT_MS: '1000' } });
  [a, b, c] = [await employer(), await employer(), await employer()];
  for (const who of [a, b, c]) await enableSaml(service, who, idp);
});
afterAll(async () => {
  await service?.stop();
  await dns?.stop();
});

// The tests below that name example-a.test rely on the first one, which verifies it for A.
describe('claiming an e-mail domain', () => {
  it('tenant A claims example-a.test and verifies it through the test DNS server', async () => {
    const claim = await a.api.post(DOMAINS, { domain: 'Example-A.TEST.' });
    expect(claim).toMatchObject({
      status: 201,
      body: {
        domain: 'example-a.test',
        status: 'pending',
        txtRecord: { name: '_employer-integrations.example-a.test', type: 'TXT', value: expect.stringMatching(/^ei-verification=[A-Za-z0-9_-]{32}$/) },
        verifiedAt: null,
        verificationMethod: null,
      },
    });

    // Nothing published yet, then a record with another value: not verified, and the record to publish is named.
    const early = await a.api.post(`${DOMAINS}/example-a.test/verify`);
    expect(early).toMatchObject({ status: 422, body: { code: 'DOMAIN_NOT_VERIFIED', reason: 'record_not_found', txtRecord: claim.body.txtRecord } });
    dns.setTxt('_employer-integrations.example-a.test', ['ei-verification=someone-elses-token']);
    expect((await a.api.post(`${DOMAINS}/example-a.test/verify`)).status).toBe(422);

    dns.setTxt('_employer-integrations.example-a.test', ['v=spf1 -all', claim.body.txtRecord.value]);
    const verified = await a.api.post(`${DOMAINS}/example-a.test/verify`);
    expect(verified).toMatchObject({ status: 200, body: { domain: 'example-a.test', status: 'verified', verificationMethod: 'dns', verifiedAt: expect.any(String) } });
    expect(dns.asked).toContain('_employer-integrations.example-a.test');

    // Verified stays verified without another look-up; claiming again changes nothing.
    const asked = dns.asked.length;
    expect((await a.api.post(`${DOMAINS}/example-a.test/verify`)).status).toBe(200);
    expect(dns.asked).toHaveLength(asked);
    expect(await a.api.post(DOMAINS, { domain: 'ｅxample-a.test' })).toMatchObject({ status: 200, body: { status: 'verified', txtRecord: claim.body.txtRecord } });
    expect((await a.api.get(DOMAINS)).body).toEqual({ domains: [verified.body], nextCursor: null });

    const audit = await service.ctx.db.slonik.any(sql.type(z.object({ action: z.string(), target_id: z.string(), details: z.record(z.string(), z.unknown()) }))`
      SELECT action, target_id, details FROM audit_log WHERE employer_id = ${a.employerId} AND action LIKE 'email_domain.%' ORDER BY global_position`);
    expect(audit).toEqual([
      { action: 'email_domain.claim', target_id: 'example-a.test', details: {} },
      { action: 'email_domain.verify', target_id: 'example-a.test', details: { method: 'dns' } },
    ]);
  });

  it("refuses tenant B's SCIM POST, cohort upload and FHIR Patient create in example-a.test with the same body as for a taken address", async () => {
    // SCIM: an address C's user holds, and one in A's domain.
    const held = unique('elsewhere.test');
    expect((await c.scim.request('POST', '/Users', scimUser(held))).status).toBe(201);
    const takenScim = await b.scim.request('POST', '/Users', scimUser(held));
    const domainScim = await b.scim.request('POST', '/Users', scimUser(unique('example-a.test')));
    expect(takenScim).toMatchObject({ status: 409, body: UNAVAILABLE_SCIM });
    expect(domainScim).toMatchObject({ status: 409, body: takenScim.body });

    // FHIR: an address a patient of B holds already (409 duplicate by the spec), and one in A's domain.
    const own = unique('b.test');
    expect((await createPatient(b, own)).status).toBe(201);
    const takenFhir = await createPatient(b, own);
    const domainFhir = await createPatient(b, unique('EXAMPLE-A.test'));
    expect(takenFhir).toEqual({ status: 409, body: UNAVAILABLE_FHIR });
    expect(domainFhir).toEqual(takenFhir);
    // ...and so is an update that moves a patient's address into the domain.
    const { id } = (await createPatient(b, unique('b.test'))).body as { id: string };
    const update = await fetch(`${service.url}/api/fhir/Patient/${id}`, {
      method: 'PUT',
      headers: { ...service.sessionHeaders(b.cookie), 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ ...patient(unique('example-a.test')), id }),
    });
    expect({ status: update.status, body: await update.json() }).toEqual(takenFhir);

    // Cohort: the rows in A's domain are named with the same message, and nothing is written.
    const before = (await b.api.get('/api/employer/patients?limit=200')).body.patients.length;
    const upload = await b.api.post('/api/employer/upload-cohort', { patients: [cohortRow(unique('b.test')), cohortRow(unique('example-a.test')), cohortRow(unique('Example-A.test'))] });
    expect(upload.status).toBe(409);
    expect(withoutRequestId(upload.body)).toEqual({
      code: 'EMAIL_UNAVAILABLE',
      message: EMAIL_UNAVAILABLE_MESSAGE,
      errors: [1, 2].map((index) => ({ index, field: 'email', path: `body.patients.${index}.email`, message: EMAIL_UNAVAILABLE_MESSAGE })),
    });
    expect((await b.api.get('/api/employer/patients?limit=200')).body.patients).toHaveLength(before);

    // Changing an existing user's address into the domain is refused the same way.
    const userOfB = (await b.scim.request('POST', '/Users', scimUser(unique('b.test')))).body.id;
    const move = await b.scim.request('PUT', `/Users/${userOfB}`, scimUser(unique('example-a.test')));
    expect(move).toMatchObject({ status: 409, body: UNAVAILABLE_SCIM });
  });

  it('lets tenant A provision addresses in example-a.test everywhere', async () => {
    expect((await a.scim.request('POST', '/Users', scimUser(unique('example-a.test')))).status).toBe(201);
    expect(await a.api.post('/api/employer/upload-cohort', { patients: [cohortRow(unique('example-a.test'))] })).toMatchObject({ status: 201, body: { created: 1 } });
    expect((await createPatient(a, unique('example-a.test'))).status).toBe(201);
    const login = await samlLogin(a, unique('example-a.test'));
    expect(login.status).toBe(302);
  });

  it("answers identically, naming no employer, for an address held by another tenant and one in another employer's claimed domain", async () => {
    const held = unique('elsewhere.test');
    expect((await c.scim.request('POST', '/Users', scimUser(held))).status).toBe(201);
    const answers = {
      scim: [await b.scim.request('POST', '/Users', scimUser(held)), await b.scim.request('POST', '/Users', scimUser(unique('example-a.test')))].map(({ status, body }) => ({ status, body })),
      saml: [await samlLogin(b, held), await samlLogin(b, unique('example-a.test'))],
    };
    expect(answers.scim[0]).toEqual({ status: 409, body: UNAVAILABLE_SCIM });
    expect(answers.scim[1]).toEqual(answers.scim[0]);
    expect(answers.saml[0]).toEqual({ status: 409, body: { code: 'EMAIL_UNAVAILABLE', message: EMAIL_UNAVAILABLE_MESSAGE } });
    expect(answers.saml[1]).toEqual(answers.saml[0]);
    const text = JSON.stringify(answers);
    for (const who of [a, c]) expect(text).not.toContain(who.employerId);
    expect(text).not.toMatch(/employer|domain|example-a/i);
  });

  it('protects nothing while a claim is unverified', async () => {
    const domain = freshDomain('pending');
    expect(await b.api.post(DOMAINS, { domain })).toMatchObject({ status: 201, body: { status: 'pending' } });
    expect((await c.scim.request('POST', '/Users', scimUser(unique(domain)))).status).toBe(201);
    expect((await createPatient(c, unique(domain))).status).toBe(201);
    expect((await c.api.post('/api/employer/upload-cohort', { patients: [cohortRow(unique(domain))] })).status).toBe(201);
    expect((await samlLogin(c, unique(domain))).status).toBe(302);
  });

  it('gives a domain to one employer at most: competing claims stay pending until the holder withdraws', async () => {
    const domain = freshDomain('contested');
    const claimOfB = await b.api.post(DOMAINS, { domain });
    expect(claimOfB.status).toBe(201);
    await claimAndVerify(c, domain);

    // B published its own record too: still refused while C holds the domain, and no one else may claim it.
    dns.setTxt(claimOfB.body.txtRecord.name, [claimOfB.body.txtRecord.value]);
    expect(await b.api.post(`${DOMAINS}/${domain}/verify`)).toMatchObject({ status: 409, body: { code: 'DOMAIN_TAKEN' } });
    expect(await a.api.post(DOMAINS, { domain })).toMatchObject({ status: 409, body: { code: 'DOMAIN_TAKEN' } });
    expect((await b.api.get(DOMAINS)).body.domains).toContainEqual(expect.objectContaining({ domain, status: 'pending' }));
    expect(await b.scim.request('POST', '/Users', scimUser(unique(domain)))).toMatchObject({ status: 409, body: UNAVAILABLE_SCIM });

    // The holder withdraws: the domain is open again, and B's claim can now be verified.
    expect((await c.api.delete(`${DOMAINS}/${domain}`)).status).toBe(204);
    expect((await c.api.get(`${DOMAINS}`)).body.domains).not.toContainEqual(expect.objectContaining({ domain }));
    expect((await a.scim.request('POST', '/Users', scimUser(unique(domain)))).status).toBe(201);
    expect(await b.api.post(`${DOMAINS}/${domain}/verify`)).toMatchObject({ status: 200, body: { status: 'verified' } });
    expect((await c.scim.request('POST', '/Users', scimUser(unique(domain)))).status).toBe(409);
    expect((await c.api.delete(`${DOMAINS}/${domain}`)).status).toBe(404);
  });

  it('leaves the addresses another employer held before the verification where they are', async () => {
    const domain = freshDomain('earlier');
    const address = unique(domain);
    const user = (await b.scim.request('POST', '/Users', scimUser(address))).body.id;
    const patientAddress = unique(domain);
    expect((await b.api.post('/api/employer/upload-cohort', { patients: [cohortRow(patientAddress)] })).status).toBe(201);
    await claimAndVerify(c, domain);

    expect(await b.scim.request('PATCH', `/Users/${user}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'displayName', value: 'Still here' }] }))
      .toMatchObject({ status: 200, body: { displayName: 'Still here', emails: [{ value: address }] } });
    expect(await b.api.post('/api/employer/upload-cohort', { patients: [{ ...cohortRow(patientAddress), lastName: 'Byron' }] })).toMatchObject({ status: 201, body: { updated: 1 } });
    expect((await samlLogin(b, address)).status).toBe(302);
    expect((await b.scim.request('POST', '/Users', scimUser(unique(domain)))).status).toBe(409);
  });

  it('says only that a DNS look-up failed when it does not answer in time', async () => {
    const domain = freshDomain('silent');
    const claim = await a.api.post(DOMAINS, { domain });
    dns.silence(claim.body.txtRecord.name);
    const refused = await a.api.post(`${DOMAINS}/${domain}/verify`);
    expect(refused).toMatchObject({ status: 422, body: { code: 'DOMAIN_NOT_VERIFIED', reason: 'lookup_failed' } });
    expect(refused.body.message).toMatch(/failed or did not answer within 1000 ms/);
    expect((await a.api.get(DOMAINS)).body.domains).toContainEqual(expect.objectContaining({ domain, status: 'pending' }));
  });

  it('refuses what is not a domain name, and a domain the employer has not claimed is 404', async () => {
    for (const domain of ['localhost', '10.0.0.1', 'a..test', 'x'.repeat(300)]) {
      expect(await a.api.post(DOMAINS, { domain }), domain).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    }
    expect(await a.api.post(DOMAINS, { domain: 'ok.test', extra: 1 })).toMatchObject({ status: 400 });
    expect((await b.api.post(`${DOMAINS}/example-a.test/verify`)).status).toBe(404);
    expect((await b.api.delete(`${DOMAINS}/example-a.test`)).status).toBe(404);
    expect((await a.api.post(`${DOMAINS}/not_a_domain/verify`)).status).toBe(400);
  });

  it('is managed in administrators\' browser sessions only', async () => {
    const { rawKey } = await createApiKey(service, a, { scopes: ['cohort:write'] });
    const response = await fetch(`${service.url}${DOMAINS}`, { headers: keyHeaders(rawKey) });
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'SESSION_REQUIRED' });
    expect((await fetch(`${service.url}${DOMAINS}`)).status).toBe(401);
  });
});

describe('the operator CLI', () => {
  const cli = (...args: string[]) =>
    run(process.execPath, ['src/cli.ts', ...args], {
      env: { ...(process.env as Record<string, string>), DATABASE_URL: databaseUri, DATA_DIR: service.ctx.config.DATA_DIR, PUBLIC_BASE_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'silent' },
      cwd: process.cwd(),
    });

  it('verifies a claim without DNS (claiming the domain first), after which other employers are refused', async () => {
    const domain = freshDomain('operator');
    const { stdout } = await cli('domains', 'verify', '--tenant', c.employerId, '--domain', domain.toUpperCase());
    expect(stdout).toContain(`${domain} is verified for employer ${c.employerId}`);
    expect((await c.api.get(DOMAINS)).body.domains).toContainEqual(expect.objectContaining({ domain, status: 'verified', verificationMethod: 'operator' }));
    expect(dns.asked.some((name) => name.endsWith(domain))).toBe(false);
    expect(await b.scim.request('POST', '/Users', scimUser(unique(domain)))).toMatchObject({ status: 409, body: UNAVAILABLE_SCIM });
    expect((await c.scim.request('POST', '/Users', scimUser(unique(domain)))).status).toBe(201);

    // A domain held by another employer, an unknown employer and bad usage: exit 2, nothing written.
    const taken = await cli('domains', 'verify', '--tenant', b.employerId, '--domain', domain).catch((error) => error);
    expect(taken).toMatchObject({ code: 2, stderr: expect.stringContaining('Another employer has verified this domain.') });
    const unknown = await cli('domains', 'verify', '--tenant', `emp_${'0'.repeat(32)}`, '--domain', freshDomain('nobody')).catch((error) => error);
    expect(unknown).toMatchObject({ code: 2, stderr: expect.stringContaining('No employer') });
    const usage = await cli('domains', 'verify', '--tenant', c.employerId, '--domain', 'localhost').catch((error) => error);
    expect(usage).toMatchObject({ code: 2, stderr: expect.stringContaining('--domain <domain name>') });
  }, 120_000);

  it("refuses a new employer whose admin address is in another employer's domain, as a taken one", async () => {
    const inDomain = await cli('tenants', 'create', '--name', 'Squatter', '--admin-email', unique('example-a.test')).catch((error) => error);
    expect(inDomain).toMatchObject({ code: 2, stderr: `${EMAIL_UNAVAILABLE_MESSAGE}\n` });
    const held = await cli('tenants', 'create', '--name', 'Squatter', '--admin-email', (await c.api.get('/api/auth/session')).body.user.email).catch((error) => error);
    expect(held).toMatchObject({ code: 2, stderr: inDomain.stderr });
  }, 120_000);
});
