// Issue 20 (low): every refused SAML callback appended an event to the named employer's stream, even
// when its SAML was off, so anyone could write into any tenant's audit trail. Now refusals of an
// employer whose SAML is on are counted per minute and reason, each minute one SamlLoginsRefused event
// (one audit entry) whatever the number of refusals or processes; callbacks for an employer whose SAML
// is off, or that does not exist, write nothing.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capabilities } from '../../src/capabilities.ts';
import { createSsoCapability, ssoCapability } from '../../src/sso/capability.ts';
import { createTestIdp, type TestIdp } from '../support/saml-idp.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableSaml, recordSamlRefusals } from './sso-test-kit.ts';

const withoutLimit = () => [
  ...capabilities.filter((capability) => capability.name !== 'sso'),
  createSsoCapability({ callbackLimit: { perSecond: 1_000, burst: 1_000 } }),
];
const junk = Buffer.from('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">junk</samlp:Response>').toString('base64');
const unsigned = Buffer.from(
  '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">' +
    '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status><saml:Assertion ID="_a"/></samlp:Response>',
).toString('base64');

let service: TestService;
let idp: TestIdp;
beforeAll(async () => {
  service = await startTestService({ env: { TRUST_PROXY: '127.0.0.1' }, capabilities: withoutLimit() });
  idp = await createTestIdp();
});
afterAll(async () => service?.stop());

const post = (target: Pick<TestService, 'url'>, employerId: string, samlResponse: string, address = '198.51.100.7') =>
  fetch(`${target.url}/api/auth/saml/callback/${employerId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address },
    body: new URLSearchParams({ SAMLResponse: samlResponse }),
  });

const eventTypesOf = (employerId: string) =>
  service.ctx.db.slonik.anyFirst(sql.type(z.object({ type: z.string() }))`SELECT type FROM events WHERE tenant_id = ${employerId} ORDER BY global_position`);
const auditOf = (employerId: string) =>
  service.ctx.db.slonik.any(sql.type(z.object({ action: z.string(), details: z.record(z.string(), z.unknown()) }))`
    SELECT action, details FROM audit_log WHERE employer_id = ${employerId} AND action LIKE 'auth.saml.%' ORDER BY global_position`);

describe('refused SAML callbacks are counted, not appended one event each', () => {
  it('records the refusals of a minute as one audit entry, counted by reason, and appends nothing per refusal', async () => {
    const tenant = await service.createTenant();
    await enableSaml(service, tenant, idp);
    const before = await eventTypesOf(tenant.employerId);
    for (let i = 0; i < 40; i++) expect((await post(service, tenant.employerId, junk, `198.51.100.${i % 4}`)).status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await post(service, tenant.employerId, unsigned)).status).toBe(401);
    expect(await eventTypesOf(tenant.employerId)).toEqual(before);

    const { minutes } = await recordSamlRefusals(service);
    const mine = minutes.filter((minute) => minute.employerId === tenant.employerId);
    expect(mine.reduce((sum, minute) => sum + minute.refusals, 0)).toBe(43);
    expect(await eventTypesOf(tenant.employerId)).toEqual([...before, ...mine.map(() => 'SamlLoginsRefused')]);
    const audit = await auditOf(tenant.employerId);
    expect(audit).toHaveLength(mine.length); // one entry per minute (the 43 posts may straddle a minute's end)
    const byReason = new Map<string, { refusals: number; addresses: Set<string> }>();
    for (const { action, details } of audit) {
      expect(action).toBe('auth.saml.logins_refused');
      expect(details).toMatchObject({ windowStart: expect.any(String), windowEnd: expect.any(String) });
      for (const { reason, refusals, clientAddresses } of details.byReason as Array<{ reason: string; refusals: number; clientAddresses: string[] }>) {
        const entry = byReason.get(reason) ?? { refusals: 0, addresses: new Set() };
        entry.refusals += refusals;
        for (const address of clientAddresses) entry.addresses.add(address);
        byReason.set(reason, entry);
      }
    }
    expect(Object.fromEntries([...byReason].map(([reason, { refusals }]) => [reason, refusals]))).toEqual({ IDP_STATUS_ERROR: 40, UNSIGNED: 3 });
    expect([...byReason.get('IDP_STATUS_ERROR')!.addresses].sort()).toEqual(['198.51.100.0', '198.51.100.1', '198.51.100.2', '198.51.100.3']);

    // The job running again records nothing more.
    await recordSamlRefusals(service);
    expect(await auditOf(tenant.employerId)).toHaveLength(mine.length);
  });

  it('writes nothing for callbacks to an employer whose SAML is off, nor for an employer that does not exist', async () => {
    const tenant = await service.createTenant();
    const before = await eventTypesOf(tenant.employerId);
    for (let i = 0; i < 10; i++) {
      const response = await post(service, tenant.employerId, junk);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'SAML_NOT_ENABLED' });
    }
    expect((await post(service, 'emp_never_created', junk)).status).toBe(404);

    const { minutes } = await recordSamlRefusals(service);
    expect(minutes.filter((minute) => minute.employerId === tenant.employerId || minute.employerId === 'emp_never_created')).toEqual([]);
    expect(await eventTypesOf(tenant.employerId)).toEqual(before);
    expect(await eventTypesOf('emp_never_created')).toEqual([]);
  });

  it('adds up the counts of several processes into one record per minute', async () => {
    const second = await startTestService({ databaseUri: service.ctx.db.connectionUri, roles: ['api'], env: { TRUST_PROXY: '127.0.0.1' }, capabilities: withoutLimit() });
    try {
      const tenant = await service.createTenant();
      await enableSaml(service, tenant, idp);
      for (let i = 0; i < 5; i++) expect((await post(service, tenant.employerId, junk)).status).toBe(401);
      for (let i = 0; i < 7; i++) expect((await post(second, tenant.employerId, junk)).status).toBe(401);
      await second.servicesOf(ssoCapability).refusals.flush();

      const { minutes } = await recordSamlRefusals(service);
      const mine = minutes.filter((minute) => minute.employerId === tenant.employerId);
      expect(mine.reduce((sum, minute) => sum + minute.refusals, 0)).toBe(12);
      expect(await auditOf(tenant.employerId)).toHaveLength(mine.length);
    } finally {
      await second.stop();
    }
  });
});
