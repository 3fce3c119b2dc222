// Issue 20, item 3: an API key with sso:manage must not become an administrator through SAML. The
// reproduced attack, end to end with real IdP key pairs signing real SAML responses: the key points
// SAML at an IdP its holder controls and signs an assertion for the administrator's e-mail. The trust
// change stays pending, the callback does not sign the administrator in, and only after an
// administrator confirms it in a session does it take effect. Every trust change is audited and
// e-mailed (read back from a real SMTP server). And the SCIM token such a key may obtain cannot
// re-address the administrator for a sign-in at the employer's own IdP.
import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { registerUser } from '../../src/tenants/commands.ts';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { PATCH_OP, scimClient, USER_SCHEMA } from '../scim/scim-client.ts';
import { waitUntil } from '../webhooks/helpers.ts';
import { enableSaml, followSignIn, getSso, postCallback, spUrls, startLogin, type JsonBody, type Tenant } from './sso-test-kit.ts';

let service: TestService;
let smtp: MailCatcher;
/** The employer's own IdP, which an administrator configured. */
let employerIdp: TestIdp;
/** The IdP the key holder controls: its own key pair, issuer and entry point. */
let attackerIdp: TestIdp;

beforeAll(async () => {
  smtp = await startMailCatcher();
  service = await startTestService({ env: { SMTP_URL: smtp.smtpUrl } });
  employerIdp = await createTestIdp();
  attackerIdp = await createTestIdp({ issuer: 'https://idp.attacker.example' });
});
afterAll(async () => {
  await service?.stop();
  await smtp?.close();
});

let counter = 0;
async function adminTenant(): Promise<Tenant & { adminEmail: string }> {
  counter += 1;
  const adminEmail = `admin.${counter}.${Date.now()}@employer.example`;
  return { ...(await service.createTenant({ adminEmail })), adminEmail };
}

async function postSsoWithKey(rawKey: string, body: unknown): Promise<{ status: number; body: JsonBody }> {
  const response = await fetch(`${service.url}/api/employer/sso`, { method: 'POST', headers: { ...keyHeaders(rawKey), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as JsonBody };
}

/** The attack's request: SAML on, at the attacker's IdP. */
const attackerTrust = () => ({ samlEnabled: true, samlEntryPoint: attackerIdp.entryPoint, samlCertificate: attackerIdp.certificatePem, samlIssuer: attackerIdp.issuer });

/** A login the browser starts at the service, answered by `signer` with a response it signs for `email`. */
async function loginAs(tenant: Tenant, signer: TestIdp, email: string) {
  const { requestId, response } = await startLogin(service, tenant.employerId);
  if (!requestId) return { status: response.status, location: null, body: (await response.json()) as JsonBody };
  return postCallback(service, tenant.employerId, await signer.createLoginResponse({ requestId, ...spUrls(service, tenant.employerId), email }));
}

async function sessionRole(location: string): Promise<string> {
  const { cookie } = await followSignIn(location);
  const session = await fetch(`${service.url}/api/auth/session`, { headers: { cookie: cookie! } });
  return ((await session.json()) as { user: { role: string } }).user.role;
}

const auditRow = z.object({ action: z.string(), actor_type: z.string(), actor_id: z.string(), details: z.record(z.string(), z.unknown()) });
async function trustAudit(employerId: string) {
  return service.ctx.db.slonik.any(sql.type(auditRow)`
    SELECT action, actor_type, actor_id, details FROM audit_log
    WHERE employer_id = ${employerId} AND (action LIKE 'sso.trust_change.%' OR (action = 'sso.config.update' AND details->'trustFields' <> '[]'))
    ORDER BY global_position`);
}

const mailsTo = (email: string) => smtp.mails.filter((mail) => [mail.to].flat().some((address) => address?.text === email));

describe('SAML trust changed with an sso:manage key (the reproduced attack)', () => {
  it("stays pending: the callback does not sign the administrator in until an administrator confirms the change in a session; then it does", async () => {
    const tenant = await adminTenant();
    await enableSaml(service, tenant, employerIdp, { samlEmailAttribute: null, samlFirstNameAttribute: null, samlLastNameAttribute: null });
    const key = await createApiKey(service, tenant, { scopes: ['sso:manage'], name: 'sso automation' });

    // The key points SAML at the attacker's IdP; the name attribute (not trust) applies at once.
    const proposal = await postSsoWithKey(key.rawKey, { ...attackerTrust(), samlFirstNameAttribute: 'givenName' });
    expect(proposal.status).toBe(202);
    expect(proposal.body).toMatchObject({ samlIssuer: employerIdp.issuer, samlEntryPoint: employerIdp.entryPoint, samlFirstNameAttribute: 'givenName' });
    const pending = proposal.body.pendingTrustChange as { changeId: string; proposedBy: unknown; changes: Record<string, unknown> };
    expect(pending).toMatchObject({
      proposedBy: { type: 'apiKey', id: key.id },
      changes: { samlEntryPoint: attackerIdp.entryPoint, samlIssuer: attackerIdp.issuer, samlCertificates: [{ fingerprintSha256: expect.any(String) }] },
    });
    expect(pending.changes).not.toHaveProperty('samlEnabled'); // already on

    // The attacker's assertion for the administrator's e-mail signs no one in.
    const refused = await loginAs(tenant, attackerIdp, tenant.adminEmail);
    expect(refused.status).toBe(401);
    expect(refused.location).toBeNull();
    expect(refused.body).toMatchObject({ code: 'SAML_RESPONSE_REJECTED' });
    // The employer's own IdP still signs its users in.
    const legitimate = await loginAs(tenant, employerIdp, tenant.adminEmail);
    expect(legitimate.status).toBe(302);

    // The key cannot confirm its own change, nor can a patient's session.
    const byKey = await fetch(`${service.url}/api/employer/sso/trust-changes/${pending.changeId}/confirm`, { method: 'POST', headers: keyHeaders(key.rawKey) });
    expect(byKey.status).toBe(403);
    expect(await byKey.json()).toMatchObject({ code: 'SESSION_REQUIRED' });
    const { userId: patientId } = await registerUser(service.ctx.commands, { tenantId: tenant.employerId, actor: { type: 'system', id: 'test' } }, {
      employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim',
      profile: { email: `patient.${counter}.${Date.now()}@employer.example`, userName: 'patient', givenName: null, familyName: null, displayName: null, externalId: null },
    });
    const patientCookie = await service.signIn(tenant.employerId, patientId);
    const byPatient = await fetch(`${service.url}/api/employer/sso/trust-changes/${pending.changeId}/confirm`, { method: 'POST', headers: service.sessionHeaders(patientCookie) });
    expect(byPatient.status).toBe(403);
    expect((await loginAs(tenant, attackerIdp, tenant.adminEmail)).status).toBe(401);

    // The administrator sees the change, and confirms it in a session: now it is in effect.
    expect((await getSso(service, tenant)).body.pendingTrustChange).toEqual(pending);
    const confirmed = await fetch(`${service.url}/api/employer/sso/trust-changes/${pending.changeId}/confirm`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ samlIssuer: attackerIdp.issuer, samlEntryPoint: attackerIdp.entryPoint, pendingTrustChange: null });
    const signedIn = await loginAs(tenant, attackerIdp, tenant.adminEmail);
    expect(signedIn.status).toBe(302);
    expect(await sessionRole(signedIn.location!)).toBe('EMPLOYER_ADMIN');

    // Audited with who did what, and e-mailed to the administrator.
    expect(await trustAudit(tenant.employerId)).toEqual([
      { action: 'sso.config.update', actor_type: 'user', actor_id: tenant.adminUserId, details: expect.objectContaining({ trustFields: ['samlCertificates', 'samlEnabled', 'samlEntryPoint', 'samlIssuer'] }) },
      { action: 'sso.trust_change.propose', actor_type: 'apiKey', actor_id: key.id, details: { changeId: pending.changeId, fields: ['samlCertificates', 'samlEntryPoint', 'samlIssuer'], replacedChangeId: null } },
      { action: 'sso.trust_change.confirm', actor_type: 'user', actor_id: tenant.adminUserId, details: { changeId: pending.changeId, fields: ['samlCertificates', 'samlEntryPoint', 'samlIssuer'] } },
    ]);
    const received = await waitUntil('the three trust e-mails', () => mailsTo(tenant.adminEmail).length >= 3 && mailsTo(tenant.adminEmail));
    expect(received.map((mail) => mail.subject).sort()).toEqual(['SAML sign-in change confirmed', 'SAML sign-in change waiting for your confirmation', 'SAML sign-in settings changed']);
    const proposedMail = received.find((mail) => mail.subject === 'SAML sign-in change waiting for your confirmation')!;
    expect(proposedMail.text).toContain(`API key ${key.id}`);
    expect(proposedMail.text).toContain(attackerIdp.entryPoint);
    expect(proposedMail.text).toContain((pending.changes.samlCertificates as Array<{ fingerprintSha256: string }>)[0]!.fingerprintSha256);
    expect(proposedMail.text).toContain('not in effect');
  });

  it('keeps SAML off when the key turns it on at its own IdP: no login starts and its assertion for the administrator is refused', async () => {
    const tenant = await adminTenant();
    const key = await createApiKey(service, tenant, { scopes: ['sso:manage'] });
    const proposal = await postSsoWithKey(key.rawKey, attackerTrust());
    expect(proposal.status).toBe(202);
    expect(proposal.body).toMatchObject({ samlEnabled: false, samlIssuer: null, pendingTrustChange: { changes: { samlEnabled: true, samlIssuer: attackerIdp.issuer } } });
    const start = await startLogin(service, tenant.employerId);
    expect(start.response.status).toBe(400);
    const forged = attackerIdp.craftResponse({ requestId: `_${randomUUID()}`, ...spUrls(service, tenant.employerId), email: tenant.adminEmail });
    const refused = await postCallback(service, tenant.employerId, forged);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'SAML_NOT_ENABLED' });
  });

  it('cannot be confirmed by the id of a proposal a later one replaced; a key or an administrator discards it, changing nothing in effect', async () => {
    const tenant = await adminTenant();
    await enableSaml(service, tenant, employerIdp);
    const key = await createApiKey(service, tenant, { scopes: ['sso:manage'] });
    const first = await postSsoWithKey(key.rawKey, { samlEntryPoint: attackerIdp.entryPoint });
    const second = await postSsoWithKey(key.rawKey, { samlCertificate: attackerIdp.certificatePem, samlIssuer: attackerIdp.issuer });
    const firstId = (first.body.pendingTrustChange as { changeId: string }).changeId;
    const secondChange = second.body.pendingTrustChange as { changeId: string; changes: Record<string, unknown> };
    expect(secondChange.changeId).not.toBe(firstId);
    expect(Object.keys(secondChange.changes).sort()).toEqual(['samlCertificate', 'samlCertificates', 'samlEntryPoint', 'samlIssuer']);

    const stale = await fetch(`${service.url}/api/employer/sso/trust-changes/${firstId}/confirm`, { method: 'POST', headers: service.sessionHeaders(tenant.cookie) });
    expect(stale.status).toBe(404);
    expect(await stale.json()).toMatchObject({ code: 'TRUST_CHANGE_NOT_PENDING' });

    const discarded = await fetch(`${service.url}/api/employer/sso/trust-changes/${secondChange.changeId}`, { method: 'DELETE', headers: keyHeaders(key.rawKey) });
    expect(discarded.status).toBe(200);
    expect(await discarded.json()).toMatchObject({ pendingTrustChange: null, samlIssuer: employerIdp.issuer, samlEntryPoint: employerIdp.entryPoint });
    expect((await loginAs(tenant, attackerIdp, tenant.adminEmail)).status).toBe(401);

    // Turning SAML off needs no one's confirmation: it only takes trust away.
    const off = await postSsoWithKey(key.rawKey, { samlEnabled: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ samlEnabled: false, pendingTrustChange: null });

    expect((await trustAudit(tenant.employerId)).map((row) => [row.action, row.actor_type])).toEqual([
      ['sso.config.update', 'user'],
      ['sso.trust_change.propose', 'apiKey'],
      ['sso.trust_change.propose', 'apiKey'],
      ['sso.trust_change.discard', 'apiKey'],
      ['sso.config.update', 'apiKey'],
    ]);
    const subjects = (await waitUntil('five trust e-mails', () => mailsTo(tenant.adminEmail).length >= 5 && mailsTo(tenant.adminEmail))).map((mail) => mail.subject);
    expect(subjects.filter((subject) => subject === 'SAML sign-in change waiting for your confirmation')).toHaveLength(2);
    expect(subjects).toContain('SAML sign-in change discarded');
  });
});

describe('the SCIM token an sso:manage key may obtain', () => {
  it("cannot re-address the administrator: a sign-in at the employer's IdP with the key holder's own address provisions a PATIENT, not the administrator", async () => {
    const tenant = await adminTenant();
    await enableSaml(service, tenant, employerIdp, { samlEmailAttribute: null });
    const key = await createApiKey(service, tenant, { scopes: ['sso:manage'] });
    // Issuing and rotating the SCIM token is within sso:manage ("Manage SSO and SCIM configuration").
    const enabled = await postSsoWithKey(key.rawKey, { scimEnabled: true });
    expect(enabled.status).toBe(200);
    const scim = scimClient(service, String(enabled.body.scimBearerToken));

    const holderAddress = `holder.${counter}.${Date.now()}@employer.example`;
    for (const [method, body] of [
      ['PATCH', { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'emails', value: [{ value: holderAddress, type: 'work', primary: true }] }] }],
      ['PATCH', { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'userName', value: holderAddress }] }],
      ['PUT', { schemas: [USER_SCHEMA], userName: holderAddress, emails: [{ value: holderAddress, type: 'work', primary: true }] }],
    ] as const) {
      const refused = await scim.request(method, `/Users/${tenant.adminUserId}`, body);
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ status: '400', scimType: 'mutability' });
    }
    expect((await scim.request('GET', `/Users/${tenant.adminUserId}`)).body).toMatchObject({ userName: tenant.adminEmail, emails: [expect.objectContaining({ value: tenant.adminEmail })] });

    const signedIn = await loginAs(tenant, employerIdp, holderAddress);
    expect(signedIn.status).toBe(302);
    expect(await sessionRole(signedIn.location!)).toBe('PATIENT');
  });
});
