// Erasure of a deactivated user's personal data (crypto-shredding), by the admin's route and by the
// CLI: refused while the user is active, then no table of the database holds the user's e-mail,
// names or SCIM attributes in clear (every row of every table searched as text), replay marks the
// user's sealed fields erased, the audit chain still verifies, and the address is free again.
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { PATCH_OP, scimTenant, USER_SCHEMA, type ScimClient } from '../scim/scim-client.ts';
import { TEST_ENCRYPTION_KEY } from '../webhooks/helpers.ts';

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ env: { ENCRYPTION_KEY: TEST_ENCRYPTION_KEY } });
});
afterAll(async () => {
  await service?.stop();
});

const cli = (...args: string[]) => runCli(service, args, { ENCRYPTION_KEY: TEST_ENCRYPTION_KEY });

/** Tables (schema.table) with a row whose text contains `needle`, case-insensitively: the whole database. */
async function tablesContaining(needle: string): Promise<string[]> {
  const tables = await service.ctx.db.slonik.any(sql.type(z.object({ schema: z.string(), name: z.string() }))`
    SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
    WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`);
  const found: string[] = [];
  for (const table of tables) {
    const hit = await service.ctx.db.slonik.oneFirst(sql.type(z.object({ hit: z.boolean() }))`
      SELECT EXISTS (SELECT 1 FROM ${sql.identifier([table.schema, table.name])} t WHERE t::text ILIKE ${`%${needle}%`}) AS hit`);
    if (hit) found.push(`${table.schema}.${table.name}`);
  }
  return found;
}

function person(tag: string) {
  const unique = `${tag}${Math.random().toString(36).slice(2, 8)}`;
  return { email: `${unique}.mail@example.test`, given: `Philomena${unique}`, family: `Zanzibar${unique}`, title: `Archivist${unique}`, phone: `+44 20 7946 ${Math.floor(1000 + Math.random() * 8999)}` };
}

const scimUser = (p: ReturnType<typeof person>) => ({
  schemas: [USER_SCHEMA], userName: p.email, name: { givenName: p.given, familyName: p.family }, title: p.title,
  emails: [{ value: p.email, type: 'work', primary: true }], phoneNumbers: [{ value: p.phone, type: 'work' }], active: true,
});

describe('user erasure', () => {
  let tenant: Awaited<ReturnType<typeof scimTenant>>;
  let scim: ScimClient;
  const erased = person('erased');
  const kept = person('kept');
  let erasedId: string;
  let keptId: string;
  const erase = (userId: string) => fetch(`${service.url}/api/employer/users/${userId}/personal-data`, { method: 'DELETE', headers: service.sessionHeaders(tenant.cookie) });

  beforeAll(async () => {
    tenant = await scimTenant(service);
    scim = tenant.scim;
    erasedId = (await scim.request('POST', '/Users', scimUser(erased))).body.id;
    keptId = (await scim.request('POST', '/Users', scimUser(kept))).body.id;
    const group = await scim.request('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Archivists', members: [{ value: erasedId }] });
    expect(group.status).toBe(201);
  });

  it('is refused while the user is active, and for another employer\'s user', async () => {
    const active = await erase(erasedId);
    expect(active.status).toBe(409);
    expect(((await active.json()) as { code: string }).code).toBe('USER_ACTIVE');
    expect((await erase('no-such-user')).status).toBe(404);
    expect(await tablesContaining(erased.family)).toEqual(['public.users']);
  });

  it('erases a deactivated user: no plaintext left, replay shows it erased, the chain verifies, others untouched', async () => {
    expect((await scim.request('PATCH', `/Users/${erasedId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'active', value: false }] })).status).toBe(200);
    const response = await erase(erasedId);
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toEqual({ userId: erasedId, erasedAt: expect.any(String) });
    expect(await (await erase(erasedId)).json()).toEqual(body);

    for (const needle of [erased.email, erased.given, erased.family, erased.title, erased.phone]) {
      expect({ needle, tables: await tablesContaining(needle) }).toEqual({ needle, tables: [] });
    }
    const shown = await scim.request('GET', `/Users/${erasedId}`);
    expect(shown.body).toMatchObject({ id: erasedId, userName: '[erased]', active: false });
    expect((await scim.request('GET', `/Users/${keptId}`)).body).toMatchObject({ userName: kept.email, name: { givenName: kept.given } });

    const replay = (await cli('events', 'replay', '--tenant', tenant.employerId)).stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((record) => !record.checkpoint);
    const ofErased = replay.filter((event) => event.data.userId === erasedId);
    expect(ofErased.map((event) => event.type)).toContain('UserErased');
    const sealed = ofErased.filter((event) => event.data.personal?.sealed);
    expect(sealed.length).toBeGreaterThan(0);
    for (const event of sealed) expect(event.erasedFields).toEqual(['data.personal.sealed']);
    expect(replay.find((event) => event.type === 'UserRegistered' && event.data.userId === keptId).erasedFields).toBeUndefined();
    expect((await cli('events', 'verify', '--tenant', tenant.employerId)).stdout).toMatch(/OK/);

    const audit = await fetch(`${service.url}/api/employer/audit-events?action=user.erase`, { headers: service.sessionHeaders(tenant.cookie) });
    expect(((await audit.json()) as { entries: Array<{ target: { id: string } }> }).entries.map((entry) => entry.target.id)).toEqual([erasedId]);
    // The address was released: the IdP may provision it again, as a new user.
    const again = await scim.request('POST', '/Users', scimUser(erased));
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(erasedId);
  });

  it('erases from the CLI too, which refuses an active user', async () => {
    expect(await cli('users', 'erase', '--tenant', tenant.employerId, '--user', keptId)).toMatchObject({ code: 2, stderr: expect.stringMatching(/deactivate the user first/) });
    expect((await scim.request('DELETE', `/Users/${keptId}`)).status).toBe(204);
    expect((await cli('users', 'erase', '--tenant', tenant.employerId, '--user', keptId)).stdout).toMatch(/Erased the personal data of user/);
    for (const needle of [kept.email, kept.given, kept.family, kept.title]) expect({ needle, tables: await tablesContaining(needle) }).toEqual({ needle, tables: [] });
  });
});
