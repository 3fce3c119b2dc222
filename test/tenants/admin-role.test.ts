// Administrators from the identity provider, through SCIM groups: an employer maps a group to the
// administrator role; the IdP adding a user to it makes the user an administrator, removing the user
// takes the role away, ends the user's sessions and revokes the keys the user created. The last
// administrator is never removed by the IdP: the refusal is audited and e-mailed.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'slonik';
import { z } from 'zod';
import { createApiKey, keyHeaders, PROBE_SCOPE } from '../support/api-keys.ts';
import { memberPatch, putMapping, reactionDone, scimUser, secondAdministrator, sessionRole } from './admin-role-kit.ts';
import { eventually } from '../support/eventually.ts';
import { startMailCatcher, type MailCatcher } from '../support/mail-catcher.ts';
import type { TestService } from '../support/service.ts';
import { startKeyService } from '../api-keys/key-service.ts';
import { groupStream } from '../../src/scim/group.ts';
import { enableScim, GROUP_SCHEMA, PATCH_OP, scimClient, scimTenant } from '../scim/scim-client.ts';

let service: TestService;
let smtp: MailCatcher;

beforeAll(async () => {
  smtp = await startMailCatcher();
  service = await startKeyService({ env: { SMTP_URL: smtp.smtpUrl } });
});
afterAll(async () => {
  await service?.stop();
  await smtp?.close();
});

const auditRow = z.object({ action: z.string(), target_id: z.string().nullable(), details: z.record(z.string(), z.unknown()) });
/** The audit log is a read model that commands do not wait for: assertions on it wait (bounded) for it to match. */
const untilAudited = (assertion: () => Promise<void>) => vi.waitFor(assertion, { timeout: 2000, interval: 20 });
const roleAudit = (employerId: string) => service.ctx.db.slonik.any(sql.type(auditRow)`
  SELECT action, target_id, details FROM audit_log WHERE employer_id = ${employerId} AND action LIKE 'admin_role.%' ORDER BY global_position`);

describe('the administrator role from SCIM group membership', () => {
  it('is given by a mapped group, taken away by removal (sessions ended, keys revoked), and mapped by an administrator only', async () => {
    const tenant = await scimTenant(service);
    const alice = await scimUser(tenant.scim, 'alice');
    const group = await tenant.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Console Admins', members: [] });
    expect(group.status).toBe(201);

    const mapped = await putMapping(service, tenant.cookie, { scimGroups: ['console admins'], samlAttribute: null, samlValues: [] });
    expect(mapped.status).toBe(200);
    expect(await mapped.json()).toEqual({ scimGroups: ['console admins'], samlAttribute: null, samlValues: [] });

    const aliceCookie = await service.signIn(tenant.employerId, alice);
    expect(await sessionRole(service, aliceCookie)).toBe('PATIENT');
    // A patient may not map groups.
    expect((await putMapping(service, aliceCookie, { scimGroups: [], samlAttribute: null, samlValues: [] })).status).toBe(403);

    expect((await tenant.scim.request('PATCH', `/Groups/${group.body.id}`, memberPatch('add', alice))).status).toBe(200);
    expect(await eventually(async () => (await sessionRole(service, aliceCookie)) === 'EMPLOYER_ADMIN', 1000)).toBe(true);

    const { rawKey } = await createApiKey(service, { cookie: aliceCookie }, { scopes: [PROBE_SCOPE] });
    expect((await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) })).status).toBe(200);

    expect((await tenant.scim.request('PATCH', `/Groups/${group.body.id}`, memberPatch('remove', alice))).status).toBe(200);
    expect(await eventually(async () => (await sessionRole(service, aliceCookie)) === 401, 1000)).toBe(true);
    const refused = await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { code: string }).code).toBe('API_KEY_REVOKED');
    // Signed in again, alice is a patient.
    expect(await sessionRole(service, await service.signIn(tenant.employerId, alice))).toBe('PATIENT');

    await untilAudited(async () => expect(await roleAudit(tenant.employerId)).toEqual([
      { action: 'admin_role.mapping.set', target_id: tenant.employerId, details: { scimGroups: ['console admins'], samlAttribute: null, samlValues: [] } },
      { action: 'admin_role.grant', target_id: alice, details: { via: 'scim_group' } },
      { action: 'admin_role.revoke', target_id: alice, details: { via: 'scim_group' } },
    ]));
  });

  it('makes the current members of a newly mapped group administrators; another mapped group keeps the role', async () => {
    const tenant = await scimTenant(service);
    const bob = await scimUser(tenant.scim, 'bob');
    const first = await tenant.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Admins A', members: [{ value: bob }] });
    const second = await tenant.scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Admins B', members: [{ value: bob }] });
    const bobCookie = await service.signIn(tenant.employerId, bob);
    expect((await putMapping(service, tenant.cookie, { scimGroups: [first.body.id, 'Admins B'], samlAttribute: null, samlValues: [] })).status).toBe(200);
    expect(await eventually(async () => (await sessionRole(service, bobCookie)) === 'EMPLOYER_ADMIN', 1000)).toBe(true);

    // Out of the first group, still in the second: still an administrator.
    expect((await tenant.scim.request('PATCH', `/Groups/${first.body.id}`, memberPatch('remove', bob))).status).toBe(200);
    expect(await reactionDone(service, groupStream(tenant.employerId, first.body.id))).toBe(true);
    expect(await sessionRole(service, bobCookie)).toBe('EMPLOYER_ADMIN');
    // Out of the second (deleted), the role goes.
    expect((await tenant.scim.request('DELETE', `/Groups/${second.body.id}`)).status).toBe(204);
    expect(await eventually(async () => (await sessionRole(service, bobCookie)) === 401, 1000)).toBe(true);
    await untilAudited(async () => expect((await roleAudit(tenant.employerId)).map(({ action, target_id }) => [action, target_id])).toEqual([
      ['admin_role.mapping.set', tenant.employerId],
      ['admin_role.grant', bob],
      ['admin_role.revoke', bob],
    ]));
  });

  it('never removes the last administrator: the refusal is audited and e-mailed to the administrators', async () => {
    const adminEmail = `last.admin.${Date.now()}@roles.example`;
    const tenant = await service.createTenant({ adminEmail });
    const scim = scimClient(service, await enableScim(service, tenant));
    const group = await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Owners', members: [{ value: tenant.adminUserId }] });
    expect((await putMapping(service, tenant.cookie, { scimGroups: ['Owners'], samlAttribute: null, samlValues: [] })).status).toBe(200);

    expect((await scim.request('PATCH', `/Groups/${group.body.id}`, memberPatch('remove', tenant.adminUserId))).status).toBe(200);
    await untilAudited(async () => expect(await roleAudit(tenant.employerId)).toContainEqual({ action: 'admin_role.revoke_refused', target_id: tenant.adminUserId, details: { via: 'scim_group', reason: 'LAST_ADMINISTRATOR' } }));
    expect(await sessionRole(service, tenant.cookie)).toBe('EMPLOYER_ADMIN');
    const mailed = () => smtp.mails.filter((mail) => [mail.to].flat().some((address) => address?.text === adminEmail) && mail.subject?.includes('last administrator'));
    expect(await eventually(async () => mailed().length === 1, 5000)).toBe(true);
    expect(mailed()[0]!.text).toContain(adminEmail);
  });

  it('refuses to deactivate the last administrator through SCIM (409, audited, e-mailed); deactivation of another takes the role, reactivation in a mapped group gives it back', async () => {
    const adminEmail = `sole.admin.${Date.now()}@roles.example`;
    const tenant = await service.createTenant({ adminEmail });
    const scim = scimClient(service, await enableScim(service, tenant));
    const deactivate = { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] };

    const refused = await scim.request('PATCH', `/Users/${tenant.adminUserId}`, deactivate);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '409' });
    expect((await scim.request('DELETE', `/Users/${tenant.adminUserId}`)).status).toBe(409);
    expect(await sessionRole(service, tenant.cookie)).toBe('EMPLOYER_ADMIN');
    await untilAudited(async () => expect(await roleAudit(tenant.employerId)).toEqual([
      { action: 'admin_role.revoke_refused', target_id: tenant.adminUserId, details: { via: 'deactivation', reason: 'LAST_ADMINISTRATOR' } },
      { action: 'admin_role.revoke_refused', target_id: tenant.adminUserId, details: { via: 'deactivation', reason: 'LAST_ADMINISTRATOR' } },
    ]));
    const mailed = () => smtp.mails.filter((mail) => [mail.to].flat().some((address) => address?.text === adminEmail) && mail.text?.includes('tried to deactivate'));
    expect(await eventually(async () => mailed().length === 2, 5000)).toBe(true);

    const second = await secondAdministrator(service, { ...tenant, scim });
    const secondCookie = await service.signIn(tenant.employerId, second);
    const { rawKey } = await createApiKey(service, { cookie: secondCookie }, { scopes: [PROBE_SCOPE] });
    expect((await scim.request('PATCH', `/Users/${second}`, deactivate)).status).toBe(200);
    expect(await sessionRole(service, secondCookie)).toBe(401);
    expect((await fetch(`${service.url}/probe/scoped`, { headers: keyHeaders(rawKey) })).status).toBe(401);
    // Reactivated while still in the mapped group: an administrator again.
    expect((await scim.request('PATCH', `/Users/${second}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: true }] })).status).toBe(200);
    const again = await service.signIn(tenant.employerId, second);
    expect(await eventually(async () => (await sessionRole(service, again)) === 'EMPLOYER_ADMIN', 1000)).toBe(true);
    // Now two administrators: the first one may go.
    expect((await scim.request('PATCH', `/Users/${tenant.adminUserId}`, deactivate)).status).toBe(200);
    await untilAudited(async () => expect((await roleAudit(tenant.employerId)).slice(-4).map(({ action, target_id, details }) => [action, target_id, details.via])).toEqual([
      ['admin_role.grant', second, 'scim_group'],
      ['admin_role.revoke', second, 'deactivation'],
      ['admin_role.grant', second, 'scim_group'],
      ['admin_role.revoke', tenant.adminUserId, 'deactivation'],
    ]));
  });
});
