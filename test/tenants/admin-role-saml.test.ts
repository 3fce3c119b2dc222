// Administrators from the identity provider, through a SAML group attribute: a real signed login (an
// independent IdP library, @boxyhq/saml20) whose assertion carries a mapped value signs the user in as
// an administrator; without it, as a patient.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, followSignIn, postCallback, spUrls, startLogin } from '../sso/sso-test-kit.ts';
import { putMapping, sessionRole } from './admin-role-kit.ts';

let service: TestService;
let idp: TestIdp;

beforeAll(async () => {
  service = await startTestService();
  idp = await createTestIdp();
});
afterAll(async () => service?.stop());

async function signInThroughIdp(employerId: string, email: string, attributes: Record<string, string>): Promise<string> {
  const { requestId } = await startLogin(service, employerId);
  const samlResponse = await idp.createLoginResponse({ requestId: requestId!, ...spUrls(service, employerId), email, attributes });
  const callback = await postCallback(service, employerId, samlResponse);
  expect(callback.status).toBe(302);
  const { cookie } = await followSignIn(callback.location!);
  return cookie!;
}

describe('the administrator role from a SAML group attribute', () => {
  it('makes a user whose assertion carries a mapped value an administrator at sign-in, and audits it', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp);
    const mapping = { scimGroups: [], samlAttribute: 'groups', samlValues: ['console-admins'] };
    expect((await putMapping(service, tenant.cookie, mapping)).status).toBe(200);

    const patientEmail = `member-${randomUUID()}@acme.test`;
    expect(await sessionRole(service, await signInThroughIdp(tenant.employerId, patientEmail, { groups: 'staff' }))).toBe('PATIENT');
    const adminEmail = `it-${randomUUID()}@acme.test`;
    expect(await sessionRole(service, await signInThroughIdp(tenant.employerId, adminEmail, { groups: 'console-admins' }))).toBe('EMPLOYER_ADMIN');
    // An existing user too: the patient, now in the group.
    expect(await sessionRole(service, await signInThroughIdp(tenant.employerId, patientEmail, { groups: 'console-admins' }))).toBe('EMPLOYER_ADMIN');

    const granted = () => service.ctx.db.slonik.anyFirst(sql.type(z.object({ email: z.string() }))`
      SELECT u.email FROM audit_log a JOIN users u ON u.id = a.target_id
      WHERE a.employer_id = ${tenant.employerId} AND a.action = 'admin_role.grant' AND a.details->>'via' = 'saml_attribute' ORDER BY a.global_position`);
    // The audit log is a read model that commands do not wait for.
    await vi.waitFor(async () => expect(await granted()).toEqual([adminEmail, patientEmail]), { timeout: 2000, interval: 20 });
  });

  it('refuses a SAML value without an attribute to carry it', async () => {
    const tenant = await service.createTenant();
    const refused = await putMapping(service, tenant.cookie, { scimGroups: [], samlAttribute: null, samlValues: ['console-admins'] });
    expect(refused.status).toBe(400);
  });
});
