// Users' personal fields are sealed in their events under a data key of each user: the events table
// holds none of a SCIM user's userName, e-mails or names, while SCIM, the read model and a rebuild
// work as before. Users registered before sealing (version 1 events, profile in clear) stay readable
// and changeable; a user whose key is destroyed shows as erased in `events replay` and in a rebuild.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { sql } from 'slonik';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { destroyDataKey } from '../../src/crypto/personal-data.ts';
import { userStream } from '../../src/tenants/user.ts';
import { filterPath, PATCH_OP, scimTenant, USER_SCHEMA, type ScimClient } from '../scim/scim-client.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { TEST_ENCRYPTION_KEY } from '../webhooks/helpers.ts';

const run = promisify(execFile);

describe("users' personal data sealed in their events", () => {
  let service: TestService;
  let tenant: Awaited<ReturnType<typeof scimTenant>>;
  let scim: ScimClient;
  beforeAll(async () => {
    service = await startTestService({ env: { ENCRYPTION_KEY: TEST_ENCRYPTION_KEY } });
    tenant = await scimTenant(service);
    scim = tenant.scim;
  });
  afterAll(async () => service?.stop());

  /** Every stored event's data and metadata as text, lower-cased: where plaintext must not be. */
  const storedEventsText = async () =>
    (await service.ctx.db.slonik.oneFirst(sql.type(z.object({ text: z.string() }))`
      SELECT lower(coalesce(string_agg(data::text || ' ' || metadata::text || ' ' || stream_name, E'\n'), '')) AS text FROM events`));
  const usersRow = (userId: string) =>
    service.ctx.db.slonik.maybeOne(sql.type(z.object({ email: z.string(), user_name: z.string(), given_name: z.string().nullable(), family_name: z.string().nullable(), display_name: z.string().nullable(), external_id: z.string().nullable() }))`
      SELECT email, user_name, given_name, family_name, display_name, external_id FROM users WHERE id = ${userId}`);
  const unique = () => randomUUID().replaceAll('-', '').slice(0, 12);
  const tenantsProjection = () => service.projections.find((projection) => projection.name === 'tenants')!;

  it('writes no userName, e-mail or name of a SCIM user into the events, and SCIM reads, filters, patches and replaces it', async () => {
    const s = unique();
    const person = {
      login: `grace.${s}@sealed.test`, home: `hopper.${s}@home.test`, given: `Gracewell${s}`, family: `Hopperstein${s}`,
      display: `Admiral ${s}`, externalId: `ext-${s}`, newFamily: `Murrayfield${s}`, newLogin: `grace.murray.${s}@sealed.test`,
    };
    const created = await scim.request('POST', '/Users', {
      schemas: [USER_SCHEMA], userName: person.login, externalId: person.externalId, displayName: person.display, active: true,
      name: { givenName: person.given, familyName: person.family },
      emails: [{ value: person.login, type: 'work', primary: true }, { value: person.home, type: 'home' }],
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    expect((await scim.request('GET', `/Users/${id}`)).body).toEqual(created.body);
    const byUserName = await scim.request('GET', filterPath('Users', `userName eq "${person.login.toUpperCase()}"`));
    expect(byUserName.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);
    const byHomeEmail = await scim.request('GET', filterPath('Users', `emails.value eq "${person.home}"`));
    expect(byHomeEmail.body.Resources.map((user: { id: string }) => user.id)).toEqual([id]);

    const patched = await scim.request('PATCH', `/Users/${id}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.familyName', value: person.newFamily }] });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toMatchObject({ givenName: person.given, familyName: person.newFamily });
    const replaced = await scim.request('PUT', `/Users/${id}`, {
      schemas: [USER_SCHEMA], userName: person.newLogin, externalId: person.externalId, displayName: person.display, active: true,
      name: { givenName: person.given, familyName: person.newFamily }, emails: [{ value: person.newLogin, type: 'work', primary: true }],
    });
    expect(replaced.status).toBe(200);
    expect((await scim.request('GET', `/Users/${id}`)).body).toMatchObject({ userName: person.newLogin, emails: [{ value: person.newLogin, type: 'work', primary: true }] });
    expect(await usersRow(id)).toMatchObject({ email: person.newLogin, user_name: person.newLogin, family_name: person.newFamily });

    // The stored events: sealed, at version 2, and not one of the person's values anywhere in the table.
    const stored = await service.ctx.db.slonik.any(sql.type(z.object({ type: z.string(), data: z.record(z.string(), z.unknown()), version: z.number() }))`
      SELECT type, data, (metadata->>'schemaVersion')::int AS version FROM events WHERE stream_name = ${userStream(tenant.employerId, id)} ORDER BY stream_revision`);
    expect(stored.map((event) => [event.type, event.version])).toEqual([['UserRegistered', 2], ['UserProfileUpdated', 2], ['UserProfileUpdated', 2]]);
    expect(stored[0]!.data).toEqual({ userId: id, employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim', personal: { sealed: expect.stringMatching(/^v1\./) } });
    expect(stored[2]!.data).toEqual({ userId: id, fields: ['email', 'userName', 'emails'], personal: { sealed: expect.stringMatching(/^v1\./) } });
    const text = await storedEventsText();
    for (const value of Object.values(person)) expect(text).not.toContain(value.toLowerCase());
  });

  it('reads users registered before sealing (version 1 events inserted raw), changes them sealed, and rebuilds both forms alike', async () => {
    const s = unique();
    const userId = randomUUID();
    const email = `legacy.${s}@before.test`;
    const metadata = { tenantId: tenant.employerId, actor: { type: 'scimToken', id: 'legacy' }, correlationId: randomUUID(), causationId: null, schemaVersion: 1, occurredAt: new Date().toISOString() };
    // As version 1 wrote them: the profile flat and in clear, the change as `changes`.
    const v1 = [
      { type: 'UserRegistered', data: { userId, employerId: tenant.employerId, role: 'PATIENT', active: true, source: 'scim', email, userName: email, givenName: 'Legacy', familyName: `Old${s}`, displayName: null, externalId: null, emails: [{ value: email, type: 'work', primary: true }] } },
      { type: 'UserProfileUpdated', data: { userId, changes: { displayName: `Legacy ${s}` } } },
    ];
    await service.ctx.db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), ${userStream(tenant.employerId, userId)}, e.revision - 1, ${tenant.employerId}, e.type, e.data, ${sql.jsonb(metadata)}
      FROM unnest(${sql.array(v1.map((event) => event.type), 'text')}::text[], ${sql.array(v1.map((event) => JSON.stringify(event.data)), 'jsonb')}::jsonb[])
        WITH ORDINALITY AS e(type, data, revision)`);

    // The live projection applies them (bounded wait on the condition).
    const deadline = Date.now() + 10_000;
    while ((await usersRow(userId))?.display_name !== `Legacy ${s}`) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const read = await scim.request('GET', `/Users/${userId}`);
    expect(read.body).toMatchObject({ userName: email, displayName: `Legacy ${s}`, name: { givenName: 'Legacy', familyName: `Old${s}` }, meta: { version: 'W/"1"' } });

    // A change: the user's data key is created now, and the change is sealed under it.
    const patched = await scim.request('PATCH', `/Users/${userId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.familyName', value: `New${s}` }] }, { 'if-match': 'W/"1"' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ userName: email, displayName: `Legacy ${s}`, name: { givenName: 'Legacy', familyName: `New${s}` } });
    expect(await storedEventsText()).not.toContain(`new${s}`);

    // A rebuild over version 1 and version 2 events gives the rows the live projection wrote.
    const before = await usersRow(userId);
    const adminBefore = (await scim.request('GET', `/Users/${tenant.adminUserId}`)).body;
    await rebuildProjection({ db: service.ctx.db, eventStore: service.ctx.eventStore, projection: tenantsProjection() });
    expect(await usersRow(userId)).toEqual(before);
    expect((await scim.request('GET', `/Users/${tenant.adminUserId}`)).body).toEqual(adminBefore);
  });

  it("shows an erased user's sealed fields as erased in events replay, and a rebuild writes the user's row erased", async () => {
    const s = unique();
    const login = `erased.${s}@sealed.test`;
    const kept = `kept.${s}@sealed.test`;
    const user = (userName: string) => ({ schemas: [USER_SCHEMA], userName, name: { givenName: 'Erin', familyName: `Erased${s}` }, emails: [{ value: userName, type: 'work', primary: true }], active: true });
    const erasedId = (await scim.request('POST', '/Users', user(login))).body.id as string;
    const keptId = (await scim.request('POST', '/Users', user(kept))).body.id as string;
    expect((await scim.request('PATCH', `/Users/${erasedId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: 'Erin' }] })).status).toBe(200);
    await destroyDataKey(service.ctx.db.slonik, tenant.employerId, erasedId);

    const env = {
      ...process.env, DATABASE_URL: service.ctx.db.connectionUri, DATA_DIR: service.ctx.config.DATA_DIR, ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://127.0.0.1:9',
    };
    const { stdout } = await run(process.execPath, ['src/cli.ts', 'events', 'replay', '--tenant', tenant.employerId, '--format', 'ndjson'], { env, maxBuffer: 64 << 20 });
    const records = stdout.trim().split('\n').map((line) => JSON.parse(line));
    const ofUser = (userId: string) => records.filter((record) => record.data?.userId === userId && record.data?.personal);
    expect(ofUser(erasedId).map((record) => record.type)).toEqual(['UserRegistered', 'UserProfileUpdated']);
    for (const record of ofUser(erasedId)) expect(record).toMatchObject({ erasedFields: ['data.personal.sealed'], data: { personal: { sealed: expect.stringMatching(/^v1\./) } } });
    expect(ofUser(keptId)).toHaveLength(1);
    expect(ofUser(keptId)[0].erasedFields).toBeUndefined();

    await rebuildProjection({ db: service.ctx.db, eventStore: service.ctx.eventStore, projection: tenantsProjection() });
    expect(await usersRow(erasedId)).toEqual({ email: `[erased]:${erasedId}`, user_name: '[erased]', given_name: null, family_name: null, display_name: null, external_id: null });
    expect(await usersRow(keptId)).toMatchObject({ email: kept, user_name: kept, family_name: `Erased${s}` });
  });
});
