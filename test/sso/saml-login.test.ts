import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changeUser, registerUser } from '../../src/tenants/commands.ts';
import { ATTACKER_EMAIL, createTestIdp, type CraftResponseOptions, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, followSignIn, postCallback, postSso, recordSamlRefusals, spUrls, startLogin, type Tenant } from './sso-test-kit.ts';

const ALLOWED_APP = 'https://app.example.test';

let service: TestService;
let idp: TestIdp;
let otherKeyIdp: TestIdp;

beforeAll(async () => {
  service = await startTestService({ env: { RETURN_TO_ALLOWED_ORIGINS: `${ALLOWED_APP}, https://other.example.test` } });
  idp = await createTestIdp();
  otherKeyIdp = await createTestIdp({ issuer: idp.issuer }); // same issuer, another key
});
afterAll(async () => service?.stop());

async function samlTenant(): Promise<Tenant> {
  const tenant = await service.createTenant();
  await enableSaml(service, tenant, idp);
  return tenant;
}

/** Starts a login through the real start route and has the IdP answer it as `overrides` say. */
async function craftAnswer(tenant: Tenant, overrides: Partial<CraftResponseOptions> = {}, signer: TestIdp = idp): Promise<string> {
  const { requestId } = await startLogin(service, tenant.employerId);
  if (!requestId) throw new Error('start did not redirect');
  return signer.craftResponse({ requestId, ...spUrls(service, tenant.employerId), email: `member-${randomUUID()}@acme.test`, ...overrides });
}

const auditRow = z.object({ action: z.string(), target_id: z.string().nullable(), details: z.record(z.string(), z.unknown()) });
async function auditOf(employerId: string) {
  return service.ctx.db.slonik.any(sql.type(auditRow)`
    SELECT action, target_id, details FROM audit_log WHERE employer_id = ${employerId} AND action LIKE 'auth.saml.%' ORDER BY global_position`);
}

async function sessionOf(cookie: string) {
  const response = await fetch(`${service.url}/api/auth/session`, { headers: { cookie } });
  return { status: response.status, body: (await response.json()) as { employerId: string; user: { id: string; email: string; role: string } } };
}

describe('a SAML login end to end', () => {
  it('provisions a PATIENT user from an independent IdP library response and signs the browser in', async () => {
    const tenant = await samlTenant();
    const { response, location, requestId } = await startLogin(service, tenant.employerId);
    expect(response.status).toBe(302);
    expect(location?.startsWith(`${idp.entryPoint}?`)).toBe(true);
    expect(requestId).toMatch(/^_/);

    const samlResponse = await idp.createLoginResponse({
      requestId: requestId!,
      ...spUrls(service, tenant.employerId),
      email: 'New.Member@Acme.test',
      attributes: { firstName: 'New', lastName: 'Member' },
    });
    const callback = await postCallback(service, tenant.employerId, samlResponse);
    expect(callback.status).toBe(302);
    expect(callback.location).toMatch(new RegExp(`^${service.url}/api/auth/signin\\?token=`));

    const signIn = await followSignIn(callback.location!);
    expect(signIn.status).toBe(303);
    expect(signIn.cookie).not.toBeNull();
    const session = await sessionOf(signIn.cookie!);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({ employerId: tenant.employerId, user: { email: 'new.member@acme.test', role: 'PATIENT' } });

    const audit = await auditOf(tenant.employerId);
    expect(audit.map((row) => row.action)).toEqual(['auth.saml.provision', 'auth.saml.login']);
    expect(audit[1]).toMatchObject({ target_id: session.body.user.id, details: { provisioned: true } });
  });
});

describe('resolving the local user', () => {
  it('signs an existing user in as who they are, without provisioning again', async () => {
    const tenant = await samlTenant();
    const adminEmail = (await sessionOf(tenant.cookie)).body.user.email;
    const first = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email: adminEmail }));
    expect(first.status).toBe(302);
    const session = await sessionOf((await followSignIn(first.location!)).cookie!);
    expect(session.body.user).toMatchObject({ id: tenant.adminUserId, role: 'EMPLOYER_ADMIN' });
    expect((await auditOf(tenant.employerId)).map((row) => row.action)).toEqual(['auth.saml.login']);
  });

  it('signs in the user who holds the address now, not one deleted through SCIM before', async () => {
    const tenant = await samlTenant();
    const context = { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } } as const;
    const email = `rehired-${randomUUID()}@acme.test`;
    const first = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email }));
    const leaverId = (await sessionOf((await followSignIn(first.location!)).cookie!)).body.user.id;
    await changeUser(service.ctx.commands, context, tenant.employerId, leaverId, () => ({ delete: true }));
    expect((await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email }))).body).toMatchObject({ code: 'USER_DEACTIVATED' });

    const profile = { email, userName: email, givenName: null, familyName: null, displayName: null, externalId: null };
    const { userId: rehiredId } = await registerUser(service.ctx.commands, context, { employerId: tenant.employerId, role: 'PATIENT', profile, active: true, source: 'scim' });
    const again = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email }));
    expect((await sessionOf((await followSignIn(again.location!)).cookie!)).body.user.id).toBe(rehiredId);
  });

  it('refuses a deactivated user, with a counted refusal and no sign-in link', async () => {
    const tenant = await samlTenant();
    const first = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email: 'leaver@acme.test' }));
    const userId = (await sessionOf((await followSignIn(first.location!)).cookie!)).body.user.id;
    await changeUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, tenant.employerId, userId, (user) => ({ profile: user.profile, active: false }));

    const refused = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email: 'leaver@acme.test' }));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'USER_DEACTIVATED' });
    expect(refused.location).toBeNull();
    await recordSamlRefusals(service);
    expect((await auditOf(tenant.employerId)).at(-1)).toMatchObject({
      action: 'auth.saml.logins_refused',
      details: { refusals: 1, byReason: [{ reason: 'USER_DEACTIVATED', refusals: 1, clientAddresses: ['127.0.0.1'] }] },
    });
  });

  it('refuses an address that belongs to a user of another employer', async () => {
    const other = await service.createTenant();
    const otherEmail = (await sessionOf(other.cookie)).body.user.email;
    const tenant = await samlTenant();
    const refused = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { email: otherEmail }));
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'EMAIL_UNAVAILABLE', message: 'This e-mail address cannot be used.' });
  });
});

describe('refused responses: 4xx with a reason, a counted refusal, and no session', () => {
  const now = Date.now();
  const cases: Array<[string, Partial<CraftResponseOptions>, string, 'other-key'?]> = [
    ['a signature by another key (its certificate in KeyInfo)', { signed: 'both' }, 'SIGNATURE_INVALID', 'other-key'],
    ['an unsigned response and assertion', { signed: 'none' }, 'UNSIGNED'],
    ['another audience', { audience: 'https://someone-else.example/sp' }, 'AUDIENCE_MISMATCH'],
    ['an expired assertion', { notBefore: new Date(now - 30 * 60_000), notOnOrAfter: new Date(now - 10 * 60_000) }, 'EXPIRED'],
    ['another Destination', { destination: 'https://elsewhere.example/acs' }, 'DESTINATION_MISMATCH'],
    ['another Recipient', { recipient: 'https://elsewhere.example/acs' }, 'RECIPIENT_MISMATCH'],
    ['a foreign Issuer signed with the configured key', { issuer: 'https://evil-idp.example/' }, 'ISSUER_MISMATCH'],
    ['a SHA-1 signature', { algorithm: 'sha1' }, 'SHA1_REFUSED'],
    ['an InResponseTo this service never sent', { requestId: '_never-sent', responseInResponseTo: '_never-sent' }, 'UNKNOWN_IN_RESPONSE_TO'],
    ['signature wrapping (an injected unsigned assertion)', { wrapping: 'injected-sibling' }, 'MULTIPLE_ASSERTIONS'],
    ['signature wrapping (signed assertion hidden in Extensions)', { wrapping: 'hidden-in-extensions' }, 'MULTIPLE_ASSERTIONS'],
    ['an e-mail changed after signing', { tamperedEmail: ATTACKER_EMAIL }, 'SIGNATURE_INVALID'],
  ];

  it.each(cases)('refuses %s', async (_name, overrides, reason, signer) => {
    const tenant = await samlTenant();
    const refused = await postCallback(service, tenant.employerId, await craftAnswer(tenant, overrides, signer === 'other-key' ? otherKeyIdp : idp));
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ code: 'SAML_RESPONSE_REJECTED', reason, message: expect.stringMatching(/(SAML|assertion).{20,}/) });
    expect(refused.location).toBeNull();
    await recordSamlRefusals(service);
    const audit = await auditOf(tenant.employerId);
    expect(audit.map((row) => row.action)).toEqual(['auth.saml.logins_refused']);
    expect(audit[0]!.details).toMatchObject({ refusals: 1, byReason: [{ reason, refusals: 1 }] });
    const users = await service.ctx.db.slonik.anyFirst(sql.type(z.object({ email: z.string() }))`SELECT email FROM users WHERE employer_id = ${tenant.employerId}`);
    expect(users).toHaveLength(1); // the admin only: nobody was provisioned
  });

  it('accepts an unsigned response carrying a signed assertion (Entra ID default)', async () => {
    const tenant = await samlTenant();
    const accepted = await postCallback(service, tenant.employerId, await craftAnswer(tenant, { signed: 'assertion' }));
    expect(accepted.status).toBe(302);
    expect((await followSignIn(accepted.location!)).cookie).not.toBeNull();
  });

  it('refuses a replayed response', async () => {
    const tenant = await samlTenant();
    const samlResponse = await craftAnswer(tenant);
    expect((await postCallback(service, tenant.employerId, samlResponse)).status).toBe(302);
    const replay = await postCallback(service, tenant.employerId, samlResponse);
    expect(replay.status).toBe(401);
    expect(replay.body).toMatchObject({ reason: 'REPLAYED' });
  });

  it('refuses a response to a request another employer started', async () => {
    const tenantA = await samlTenant();
    const tenantB = await samlTenant();
    const { requestId } = await startLogin(service, tenantA.employerId);
    const toB = idp.craftResponse({ requestId: requestId!, ...spUrls(service, tenantB.employerId), email: 'member@acme.test' });
    const refused = await postCallback(service, tenantB.employerId, toB);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ reason: 'UNKNOWN_IN_RESPONSE_TO' });
  });

  it('refuses a response for another employer posted to this employer\'s ACS URL', async () => {
    const tenantA = await samlTenant();
    const tenantB = await samlTenant();
    const forA = await craftAnswer(tenantA);
    const refused = await postCallback(service, tenantB.employerId, forA);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ reason: 'AUDIENCE_MISMATCH' });
  });
});

describe('SAML not available', () => {
  it('answers 400 SAML_NOT_ENABLED for an employer without SAML, and records nothing of a callback', async () => {
    const tenant = await service.createTenant();
    const start = await startLogin(service, tenant.employerId);
    expect(start.response.status).toBe(400);
    expect(await start.response.json()).toMatchObject({ code: 'SAML_NOT_ENABLED' });
    const callback = await postCallback(service, tenant.employerId, Buffer.from('<x/>').toString('base64'));
    expect(callback.status).toBe(400);
    expect(callback.body).toMatchObject({ code: 'SAML_NOT_ENABLED' });
    await recordSamlRefusals(service);
    expect(await auditOf(tenant.employerId)).toEqual([]);
  });

  it('refuses a login started while SAML was enabled once it is disabled', async () => {
    const tenant = await samlTenant();
    const samlResponse = await craftAnswer(tenant);
    expect((await postSso(service, tenant, { samlEnabled: false })).status).toBe(200);
    const callback = await postCallback(service, tenant.employerId, samlResponse);
    expect(callback.status).toBe(400);
    expect(callback.body).toMatchObject({ code: 'SAML_NOT_ENABLED' });
  });

  it('answers 404 for an unknown employer on every SAML route', async () => {
    const start = await startLogin(service, 'emp_unknown');
    expect(start.response.status).toBe(404);
    expect(await start.response.json()).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('emp_unknown') });
    expect((await postCallback(service, 'emp_unknown', 'eA==')).status).toBe(404);
    expect((await fetch(`${service.url}/api/auth/saml/metadata/emp_unknown`)).status).toBe(404);
  });
});

describe('returnTo', () => {
  it('brings the browser back to a path on this service after the sign-in exchange', async () => {
    const tenant = await samlTenant();
    const { requestId } = await startLogin(service, tenant.employerId, '/benefits/claims?tab=open');
    const callback = await postCallback(service, tenant.employerId, idp.craftResponse({ requestId: requestId!, ...spUrls(service, tenant.employerId), email: 'path@acme.test' }));
    expect(callback.status).toBe(302);
    const signIn = await followSignIn(callback.location!);
    expect(signIn.status).toBe(303);
    expect(signIn.next).toBe('/benefits/claims?tab=open');
    expect(signIn.cookie).not.toBeNull();
  });

  it('sends the token to an allowlisted origin', async () => {
    const tenant = await samlTenant();
    const { requestId } = await startLogin(service, tenant.employerId, `${ALLOWED_APP}/welcome?from=sso`);
    const callback = await postCallback(service, tenant.employerId, idp.craftResponse({ requestId: requestId!, ...spUrls(service, tenant.employerId), email: 'app@acme.test' }));
    expect(callback.status).toBe(302);
    const location = new URL(callback.location!);
    expect(location.origin).toBe(ALLOWED_APP);
    expect(location.searchParams.get('from')).toBe('sso');
    // The token works once at the sign-in exchange, as a link from the CLI would.
    const signIn = await followSignIn(`${service.url}/api/auth/signin?token=${encodeURIComponent(location.searchParams.get('token')!)}`);
    expect(signIn.cookie).not.toBeNull();
  });

  it.each(['https://evil.example/phish', '//evil.example/phish', '/\\evil.example/phish', 'javascript:alert(1)', `${ALLOWED_APP}.evil.example/`, 'http://app.example.test/'])(
    'refuses %s (no open redirect)',
    async (returnTo) => {
      const tenant = await samlTenant();
      const { response, location } = await startLogin(service, tenant.employerId, returnTo);
      expect(response.status).toBe(400);
      expect(location).toBeNull();
      expect(await response.json()).toMatchObject({ code: 'RETURN_TO_NOT_ALLOWED' });
    },
  );
});

describe('SP metadata', () => {
  it('serves entity id, ACS URL and NameID format as application/samlmetadata+xml, before SAML is enabled too', async () => {
    const tenant = await service.createTenant();
    const response = await fetch(`${service.url}/api/auth/saml/metadata/${tenant.employerId}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
    const xml = await response.text();
    const { audience, acsUrl } = spUrls(service, tenant.employerId);
    expect(xml).toContain(`entityID="${audience}"`);
    expect(xml).toContain(`Location="${acsUrl}"`);
    expect(xml).toContain('urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress');
  });
});

describe('several processes', () => {
  it('finishes in one process a login started in another (shared request store and replay cache)', async () => {
    const second = await startTestService({ databaseUri: service.ctx.db.connectionUri, env: { PUBLIC_BASE_URL: service.url } });
    try {
      const secondUrl = `http://127.0.0.1:${second.ctx.config.PORT}`;
      const tenant = await samlTenant();
      const samlResponse = await craftAnswer(tenant, { email: 'roaming@acme.test' }); // started on the first process
      const finished = await postCallback({ url: secondUrl }, tenant.employerId, samlResponse);
      expect(finished.status).toBe(302);
      const session = await sessionOf((await followSignIn(finished.location!)).cookie!);
      expect(session.body).toMatchObject({ employerId: tenant.employerId, user: { email: 'roaming@acme.test', role: 'PATIENT' } });
      // ...and the first process refuses the same response: the replay cache is shared too.
      expect((await postCallback(service, tenant.employerId, samlResponse)).body).toMatchObject({ reason: 'REPLAYED' });
    } finally {
      await second.stop();
    }
  });
});
