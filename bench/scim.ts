// SCIM provisioning speed, against 127.0.0.1 on a fresh embedded Postgres (or DATABASE_URL's server):
// (a) users provisioned per second by one client doing Okta's sequence for each user, GET
//     /Users?filter=userName eq "..." (no match) and then POST /Users, in an employer that already
//     holds 50,000 users, after 500 such users that warm the process up (JIT, plan caches, pools) and
//     are not counted, next to its physical reference: as many plain single-row INSERT transactions,
//     from one client, in the same run (the ratio is what to compare between runs: this host's speed
//     varies 2x); (b) p50/p99 of GET /Users?filter=userName eq "..." for existing users.
// The 50,000 users are seeded as UserRegistered events inserted by one SQL statement (one stream per
// user, as the command path writes them; in version 1's form, profile in clear, as users registered
// before sealing: read through the upcaster, no data keys), then the tenants projection builds the
// read model as it would for any events. The SCIM rate limit is lifted for the run (it would cap one employer at 50
// requests/s): this measures the service, not the limit.
//   npm run bench -- scim [provisioned users=2000] [filter requests=2000] [seeded users=50000] [warm-up users=500]
import { randomUUID } from 'node:crypto';
import { sql, type DatabasePool } from 'slonik';
import { Pool } from 'undici';
import { z } from 'zod';
import { capabilities } from '../src/capabilities.ts';
import { issueSignInToken } from '../src/identity/commands.ts';
import { createScimCapability } from '../src/scim/capability.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { percentile, plainInsertTransactions, sessionCookieOf, startBenchService } from './support.ts';

const MAX_SECONDS_PER_PHASE = 60;
const UNLIMITED = { perSecond: 1e9, burst: 1e9 };

export default async function scimBench(args: string[]) {
  const [provisionCount = 2000, filterCount = 2000, seededUsers = 50_000, warmUpCount = 500] = args.map(Number);
  const scim = createScimCapability({ rateLimits: { perToken: UNLIMITED, failedAuthPerAddress: UNLIMITED } });
  const service = await startBenchService({ capabilities: capabilities.map((capability) => (capability.name === 'scim' ? scim : capability)) });
  const http = new Pool(service.url, { connections: 1 });
  try {
    const { employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor: { type: 'system', id: 'bench' } }, { name: 'Bench', adminEmail: 'admin@bench.test' });
    const token = await enableScim(http, service.ctx, employerId, adminUserId);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' };
    const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
      const response = await http.request({ method, path, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await response.body.text();
      return { status: response.statusCode, text };
    };

    // Seed
    console.log('SCIM rate limit lifted for this run (the default caps one employer at 50 requests/s); one sequential client over keep-alive.');
    const seedStarted = performance.now();
    await service.ctx.db.slonik.query(sql.unsafe`
      INSERT INTO events (event_id, stream_name, stream_revision, tenant_id, type, data, metadata)
      SELECT gen_random_uuid(), 'tenant-' || ${employerId} || '.user-' || id, 0, ${employerId}, 'UserRegistered',
        jsonb_build_object('userId', id, 'employerId', ${employerId}::text, 'role', 'PATIENT', 'active', true, 'source', 'scim',
          'email', 'seed' || n || '@bench.test', 'userName', 'seed' || n || '@bench.test', 'givenName', 'Seed', 'familyName', 'User' || n,
          'displayName', null, 'externalId', 'ext-' || n),
        jsonb_build_object('tenantId', ${employerId}::text, 'actor', jsonb_build_object('type', 'scimToken', 'id', 'bench'), 'correlationId', gen_random_uuid(),
          'causationId', null, 'schemaVersion', 1, 'occurredAt', now())
      FROM (SELECT n, gen_random_uuid()::text AS id FROM generate_series(1, ${seededUsers}) AS n) AS seed`);
    const appended = performance.now();
    const projected = await waitFor(async () => (await countUsers(service.ctx.db.slonik, employerId)) >= seededUsers + 1);
    console.log(`seeded ${seededUsers} users as UserRegistered events (one stream each) inserted by one SQL statement (new streams, revision 0) in ${seconds(appended - seedStarted)} s, ` +
      `read model built by the tenants projection in ${seconds(performance.now() - appended)} s${projected ? '' : ' (TIMED OUT)'}`);
    await service.ctx.db.slonik.query(sql.unsafe`ANALYZE users`);

    // (a) Okta's sequence, one client, after the warm-up
    const provision = async () => {
      const login = `okta.${randomUUID()}@bench.test`;
      const t0 = performance.now();
      const lookup = await call('GET', `/api/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${login}"`)}&startIndex=1&count=100`);
      const t1 = performance.now();
      const created = await call('POST', '/api/scim/v2/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: login,
        name: { givenName: 'Okta', familyName: 'Bench' },
        emails: [{ primary: true, value: login, type: 'work' }],
        displayName: 'Okta Bench',
        active: true,
      });
      return { filterMs: t1 - t0, createMs: performance.now() - t1, ok: lookup.status === 200 && created.status === 201 };
    };
    for (let i = 0; i < warmUpCount; i++) await provision();
    const latencies = { filter: [] as number[], create: [] as number[] };
    let provisioned = 0;
    let failures = 0;
    const started = performance.now();
    while (provisioned + failures < provisionCount && performance.now() - started < MAX_SECONDS_PER_PHASE * 1000) {
      const { filterMs, createMs, ok } = await provision();
      latencies.filter.push(filterMs);
      latencies.create.push(createMs);
      if (ok) provisioned += 1;
      else failures += 1;
    }
    const elapsed = (performance.now() - started) / 1000;
    console.log(`(a) Okta sequence (filter userName, then POST), one client, ${warmUpCount} users to warm up, then ${provisioned} users in ${elapsed.toFixed(1)} s: ` +
      `${(provisioned / elapsed).toFixed(0)} users/s (goal >= 200)${failures ? `, ${failures} FAILED` : ''}`);
    console.log(`    filter p50 ${ms(latencies.filter, 50)} p99 ${ms(latencies.filter, 99)}; create p50 ${ms(latencies.create, 50)} p99 ${ms(latencies.create, 99)}`);
    // The physical reference, right after on the same machine and database: one plain single-row INSERT
    // transaction per user provisioned, from one client as well.
    const insertsPerSecond = await plainInsertTransactions(service.ctx.db.eventStore, provisioned, 1);
    console.log(`    reference: ${provisioned} plain single-row INSERT transactions, one client: ${insertsPerSecond.toFixed(0)} /s; ` +
      `ratio users provisioned / INSERT transactions: ${(provisioned / elapsed / insertsPerSecond).toFixed(3)}`);

    // (b) Filter latency on existing users
    const total = await countUsers(service.ctx.db.slonik, employerId);
    const filterLatencies: number[] = [];
    let misses = 0;
    const filterStarted = performance.now();
    for (let i = 0; i < filterCount && performance.now() - filterStarted < MAX_SECONDS_PER_PHASE * 1000; i++) {
      const n = 1 + Math.floor(Math.random() * seededUsers);
      const t0 = performance.now();
      const response = await call('GET', `/api/scim/v2/Users?filter=${encodeURIComponent(`userName eq "SEED${n}@bench.test"`)}`);
      filterLatencies.push(performance.now() - t0);
      if (response.status !== 200 || !response.text.includes('"totalResults":1')) misses += 1;
    }
    console.log(`(b) GET /Users?filter=userName eq "..." with ${total} users in the employer, ${filterLatencies.length} sequential requests: ` +
      `p50 ${ms(filterLatencies, 50)} p99 ${ms(filterLatencies, 99)} (goal p99 < 20 ms)${misses ? `, ${misses} WRONG ANSWERS` : ''}`);
  } finally {
    await http.close();
    await service.stopAll();
  }
}

async function enableScim(http: Pool, ctx: Parameters<typeof issueSignInToken>[0], employerId: string, adminUserId: string): Promise<string> {
  const { signInUrl } = await issueSignInToken(ctx, { tenantId: employerId, actor: { type: 'system', id: 'bench' } }, { userId: adminUserId, via: 'cli' });
  const cookie = await sessionCookieOf(signInUrl);
  const response = await http.request({
    method: 'POST',
    path: '/api/employer/sso',
    headers: { cookie, origin: ctx.config.PUBLIC_BASE_URL, 'content-type': 'application/json' },
    body: JSON.stringify({ scimEnabled: true }),
  });
  const body = (await response.body.json()) as { scimBearerToken?: string };
  if (!body.scimBearerToken) throw new Error(`enabling SCIM failed: ${response.statusCode}`);
  return body.scimBearerToken;
}

async function countUsers(pool: DatabasePool, employerId: string): Promise<number> {
  return Number(await pool.oneFirst(sql.type(z.object({ count: z.coerce.number() }))`SELECT count(*) AS count FROM users WHERE employer_id = ${employerId}`));
}

/** Polls until `done` (the projection runs in this process; a bench may poll), at most two minutes. */
async function waitFor(done: () => Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + 120_000;
  while (performance.now() < deadline) {
    if (await done()) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

function ms(latencies: number[], p: number): string {
  return `${percentile([...latencies].sort((a, b) => a - b), p).toFixed(2)} ms`;
}

function seconds(milliseconds: number): string {
  return (milliseconds / 1000).toFixed(1);
}
