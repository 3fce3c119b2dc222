// The employer's SCIM request log: one entry per authenticated SCIM request with its method, path
// (ids kept), status, scimType, detail and duration, readable by the admin's session only and by its
// own employer only; and no personal value in it: a user provisioned, filtered for, patched and
// refused with a recognisable e-mail and name leaves no trace of them in the table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { filterPath, PATCH_OP, scimTenant, USER_SCHEMA } from './scim-client.ts';

describe('SCIM request log', () => {
  let service: TestService;
  let tenant: Awaited<ReturnType<typeof scimTenant>>;
  const unique = Math.random().toString(36).slice(2, 8);
  const email = `telltale${unique}@example.test`;
  const givenName = `Ermintrude${unique}`;
  const familyName = `Quackenbush${unique}`;
  let userId: string;

  beforeAll(async () => {
    service = await startTestService();
    tenant = await scimTenant(service);
    const { scim } = tenant;
    const created = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: email, name: { givenName, familyName }, emails: [{ value: email, type: 'work', primary: true }] });
    expect(created.status).toBe(201);
    userId = created.body.id;
    expect((await scim.request('GET', filterPath('Users', `userName eq "${email}"`, '&startIndex=1&count=10'))).status).toBe(200);
    expect((await scim.request('PATCH', `/Users/${userId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.familyName', value: `${familyName}x` }] })).status).toBe(200);
    // Refusals that could echo what was sent: a taken userName, an unparsable filter, a bad PATCH path, an address as an id.
    expect((await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: email, emails: [{ value: email }] })).status).toBe(409);
    expect((await scim.request('GET', filterPath('Users', `userName eq "${email}" and (`))).status).toBe(400);
    expect((await scim.request('PATCH', `/Users/${userId}`, { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: `emails[value eq "${email}"].x.y`, value: givenName }] })).status).toBe(400);
    expect((await scim.request('GET', `/Users/${encodeURIComponent(email)}`)).status).toBe(404);
    expect((await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: givenName, emails: [{ value: `not-an-address ${givenName}` }] })).status).toBe(400);
    // Each entry is written once its response has gone.
    expect(await eventually(async () => Number((await service.ctx.db.pg.query('SELECT count(*) FROM scim_request_log')).rows[0].count) === 8, 10_000)).toBe(true);
  });
  afterAll(async () => service?.stop());

  const list = (query = '', cookie = tenant.cookie) => fetch(`${service.url}/api/employer/scim-requests${query}`, { headers: service.sessionHeaders(cookie) });

  it('lists every request with its method, path, status, scimType, detail and duration, newest first', async () => {
    const response = await list();
    expect(response.status).toBe(200);
    const { requests } = (await response.json()) as { requests: Array<Record<string, any>> };
    expect(requests).toHaveLength(8);
    expect(requests.map((entry) => `${entry.method} ${entry.status}`).reverse()).toEqual(['POST 201', 'GET 200', 'PATCH 200', 'POST 409', 'GET 400', 'PATCH 400', 'GET 404', 'POST 400']);
    const [created] = requests.slice(-1);
    expect(created).toMatchObject({ path: '/api/scim/v2/Users', scimType: null, detail: null, durationMs: expect.any(Number), receivedAt: expect.any(String), requestId: expect.any(String) });
    expect(requests.find((entry) => entry.method === 'PATCH' && entry.status === 200)!.path).toBe(`/api/scim/v2/Users/${userId}`);
    expect(requests.find((entry) => entry.method === 'GET' && entry.status === 200)!.path).toBe('/api/scim/v2/Users?filter=…&startIndex=1&count=10');
    expect(requests.find((entry) => entry.status === 409)).toMatchObject({ scimType: 'uniqueness', detail: expect.any(String) });
    expect(requests.find((entry) => entry.method === 'GET' && entry.status === 400)).toMatchObject({ scimType: 'invalidFilter', detail: 'The filter cannot be parsed.' });
    expect(requests.find((entry) => entry.status === 404)!.path).toBe('/api/scim/v2/Users/:userId');
  });

  it('keeps no personal value: no e-mail, name or userName anywhere in the log', async () => {
    const rows = await service.ctx.db.pg.query(`SELECT t::text AS text FROM scim_request_log t`);
    expect(rows.rows.length).toBe(8);
    for (const needle of [email, `telltale${unique}`, givenName, familyName]) {
      expect({ needle, hits: rows.rows.filter((row) => row.text.toLowerCase().includes(needle.toLowerCase())) }).toEqual({ needle, hits: [] });
    }
  });

  it('pages by cursor, filters by status class, and shows each employer its own requests to its admins only', async () => {
    const first = (await (await list('?limit=3')).json()) as { requests: Array<{ id: string }>; nextCursor: string };
    const second = (await (await list(`?limit=3&cursor=${first.nextCursor}`)).json()) as { requests: Array<{ id: string }> };
    expect(second.requests.map((entry) => entry.id)).not.toContain(first.requests[0]!.id);
    expect(first.requests).toHaveLength(3);
    expect(second.requests).toHaveLength(3);
    const errors = (await (await list('?status=4xx')).json()) as { requests: Array<{ status: number }> };
    expect(errors.requests.map((entry) => entry.status)).toEqual([400, 404, 400, 400, 409]);
    expect((await list('?status=6xx')).status).toBe(400);
    expect((await list('?cursor=nonsense')).status).toBe(400);

    const other = await service.createTenant();
    expect(((await (await list('', other.cookie)).json()) as { requests: unknown[] }).requests).toEqual([]);
    expect((await fetch(`${service.url}/api/employer/scim-requests`)).status).toBe(401);
  });
});
