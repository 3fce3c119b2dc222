// Patients and FHIR, against 127.0.0.1 on a fresh embedded Postgres (or DATABASE_URL's server):
// (a) wall time of a 10,000-row cohort upload (POST to the answer, once the rows are readable; goal
//     under 2 s), three runs of new rows and their median beside their physical reference
//     (bench/cohort-upload.ts), then the first file again (all unchanged);
// (b) p50/p99 of GET /api/fhir/Patient?email=... with 100,000 patients in the employer (goal p99 under
//     20 ms), one sequential client;
// (c) GET /api/fhir/Patient/{id} req/s at 32 connections (autocannon, API key), against a reference
//     that is only fastify, a pg pool and the read's SQL (the statement of findResource); goal ratio
//     >= 0.5. Both servers run in this process, as autocannon does, driven alternately;
// (d) SMART Backend Services token issuance per second (each a signed ES384 assertion checked: key by
//     kid, claims, jti recorded), 8 concurrent clients, assertions signed beforehand;
// (e) the same read with a SMART access token (Authorization: Bearer) against with the API key,
//     alternated rounds at 32 connections: ratio bearer/key, goal >= 0.9.
// (f) p50/p99 of GET /api/fhir/Patient/{id}/$everything?_count=100 for a patient with 100 resources
//     (itself and 99 Observations created through the API), one sequential client, one page each.
// The FHIR and token rate limits are lifted for the run (FHIR caps an employer at 120 requests a minute).
//   npm run bench -- fhir [patients=100000] [email searches=1000] [seconds per read run=10] [$everything requests=500]
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import Fastify from 'fastify';
import pg from 'pg';
import { sql } from 'slonik';
import { Pool } from 'undici';
import { createApiKey } from '../src/api-keys/commands.ts';
import { registerSmartClient } from '../src/smart-clients/commands.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { emailOf, printCohortUploads, ROWS_PER_UPLOAD, uploadCohort } from './cohort-upload.ts';
import { freePort, percentile, startBenchService } from './support.ts';

type BenchService = Awaited<ReturnType<typeof startBenchService>>;

const CONNECTIONS = 32;

export default async function fhirBench(args: string[]) {
  const [patientCount = 100_000, searchCount = 1000, seconds = 10, everythingCount = 500] = args.map(Number);
  const service = await startBenchService({ env: { FHIR_RATE_LIMIT_PER_MIN: '100000000', SMART_TOKEN_RATE_LIMIT_PER_MIN: '100000000', PROJECTION_WAIT_TIMEOUT_MS: '60000' } });
  const http = new Pool(service.url, { connections: 1 });
  const actor = { type: 'system', id: 'bench' } as const;
  try {
    const { employerId, adminUserId } = await createEmployer(service.ctx, { tenantId: null, actor }, { name: 'Bench', adminEmail: 'admin@bench.test' });
    const { rawKey } = await createApiKey(service.ctx, { tenantId: employerId, actor }, {
      name: 'bench', scopes: ['fhir:read', 'fhir:write', 'cohort:write'], allowedIpCidrs: [], expiresAt: null, rateLimitPerMinute: 100_000_000, createdBy: adminUserId, now: Date.now(),
    });
    const headers = { 'x-api-key': rawKey, 'x-api-version': '2026-02-01' };

    console.log(`FHIR rate limit lifted for this run. Patients: ${patientCount}, uploaded ${ROWS_PER_UPLOAD} a request.`);
    const uploaded = await printCohortUploads(service, http, headers, '(a)');
    const again = await uploadCohort(http, headers, 0);
    console.log(`    the first file again: ${again.ms.toFixed(0)} ms (unchanged ${again.result.unchanged})`);
    const seedStarted = performance.now();
    const uploadTimes: number[] = [];
    for (let from = uploaded; from < patientCount; from += ROWS_PER_UPLOAD) uploadTimes.push((await uploadCohort(http, headers, from)).ms);
    if (uploadTimes.length > 0) {
      console.log(`    seeding up to ${patientCount} patients: ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; later uploads of ${ROWS_PER_UPLOAD} new rows: ` +
        `min ${Math.min(...uploadTimes).toFixed(0)} ms, max ${Math.max(...uploadTimes).toFixed(0)} ms`);
    }
    // Fresh statistics, as autovacuum would have gathered after such a load.
    await service.ctx.db.slonik.query(sql.unsafe`ANALYZE fhir_resources`);
    await service.ctx.db.slonik.query(sql.unsafe`ANALYZE fhir_search_values`);

    // (b) search by e-mail
    const latencies: number[] = [];
    let someId = '';
    for (let i = 0; i < searchCount; i++) {
      const email = emailOf(Math.floor(Math.random() * patientCount)).toUpperCase();
      const started = performance.now();
      const response = await http.request({ method: 'GET', path: `/api/fhir/Patient?email=${encodeURIComponent(email)}`, headers });
      const bundle = JSON.parse(await response.body.text());
      latencies.push(performance.now() - started);
      if (response.statusCode !== 200 || bundle.total !== 1) throw new Error(`search for ${email} answered ${response.statusCode} total ${bundle.total}`);
      someId = bundle.entry[0].resource.id;
    }
    latencies.sort((a, b) => a - b);
    console.log(`(b) Patient?email= with ${patientCount} patients, ${searchCount} sequential searches: p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms  [goal p99 < 20 ms]`);

    // (c) read throughput against the reference
    const reference = await startReference(service.ctx.db.connectionUri, employerId);
    try {
      const drive = async (url: string) => {
        const result = await autocannon({ url: `${url}/api/fhir/Patient/${someId}`, connections: CONNECTIONS, duration: seconds, headers });
        if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        return { rps: result.requests.total / result.duration, p99: result.latency.p99 };
      };
      const runs = { service: [] as number[], reference: [] as number[] };
      for (const which of ['service', 'reference', 'reference', 'service'] as const) {
        const run = await drive(which === 'service' ? service.url : reference.url);
        runs[which].push(run.rps);
        console.log(`    ${which.padEnd(9)} ${run.rps.toFixed(0)} req/s, p99 ${run.p99} ms`);
      }
      const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
      console.log(`(c) FHIR read at ${CONNECTIONS} connections: service ${mean(runs.service).toFixed(0)} req/s, reference ${mean(runs.reference).toFixed(0)} req/s, ` +
        `ratio ${(mean(runs.service) / mean(runs.reference)).toFixed(2)}  [goal >= 0.5]`);
    } finally {
      await reference.stop();
    }
    await smartBench(service, { employerId, adminUserId }, `/api/fhir/Patient/${someId}`, headers, seconds);

    // (f) $everything of a patient with 100 resources
    for (let i = 0; i < 99; i++) {
      const observation = { resourceType: 'Observation', status: 'final', code: { text: `reading ${i}` }, subject: { reference: `Patient/${someId}` }, valueQuantity: { value: i, unit: 'kg' } };
      const response = await http.request({ method: 'POST', path: '/api/fhir/Observation', headers: { ...headers, 'content-type': 'application/fhir+json' }, body: JSON.stringify(observation) });
      await response.body.dump();
      if (response.statusCode !== 201) throw new Error(`creating an Observation answered ${response.statusCode}`);
    }
    const everything: number[] = [];
    for (let i = 0; i < everythingCount; i++) {
      const started = performance.now();
      const response = await http.request({ method: 'GET', path: `/api/fhir/Patient/${someId}/$everything?_count=100`, headers });
      const bundle = JSON.parse(await response.body.text());
      everything.push(performance.now() - started);
      if (response.statusCode !== 200 || bundle.entry.length !== 100) throw new Error(`$everything answered ${response.statusCode} with ${bundle.entry?.length} entries`);
    }
    everything.sort((a, b) => a - b);
    console.log(`(f) Patient/$everything of 100 resources, one page, ${everythingCount} sequential requests: p50 ${percentile(everything, 50).toFixed(2)} ms, p99 ${percentile(everything, 99).toFixed(2)} ms`);
  } finally {
    await http.close();
    await service.stopAll();
  }
}

/** (d) token issuance and (e) a bearer-authenticated read against the same read with the API key `keyHeaders`. */
async function smartBench(service: BenchService, tenant: { employerId: string; adminUserId: string }, readPath: string, keyHeaders: Record<string, string>, seconds: number) {
  const { privateKey, publicKey } = await generateKeyPair('ES384', { extractable: true });
  const kid = 'bench-key';
  const clientId = await registerSmartClient(service.ctx, { tenantId: tenant.employerId, actor: { type: 'user', id: tenant.adminUserId } }, {
    name: 'bench', jwks: { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'ES384' }] }, jwksUrl: null, scopes: ['system/*.rs'], registeredBy: tenant.adminUserId, now: Date.now(),
  });
  const tokenUrl = `${service.url}/api/oauth/token`;
  const sign = () => new SignJWT({ jti: randomUUID() }).setProtectedHeader({ alg: 'ES384', kid }).setIssuer(clientId).setSubject(clientId)
    .setAudience(tokenUrl).setExpirationTime(Math.floor(Date.now() / 1000) + 280).sign(privateKey);
  const http = new Pool(service.url, { connections: 8 });
  const requestToken = async (assertion: string) => {
    const response = await http.request({
      method: 'POST', path: '/api/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'system/*.rs', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }).toString(),
    });
    const body = JSON.parse(await response.body.text());
    if (response.statusCode !== 200) throw new Error(`token endpoint answered ${response.statusCode} ${JSON.stringify(body)}`);
    return body.access_token as string;
  };
  try {
    const count = 2000;
    const assertions = await Promise.all(Array.from({ length: count }, sign));
    const started = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < count) await requestToken(assertions[next++]!);
    }));
    const elapsed = (performance.now() - started) / 1000;
    console.log(`(d) SMART token issuance, ${count} assertions (ES384) from 8 clients: ${(count / elapsed).toFixed(0)} tokens/s`);

    const bearerHeaders = { authorization: `Bearer ${await requestToken(await sign())}` };
    const drive = async (headers: Record<string, string>) => {
      const result = await autocannon({ url: `${service.url}${readPath}`, connections: CONNECTIONS, duration: seconds, headers });
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`);
      return { rps: result.requests.total / result.duration, p99: result.latency.p99 };
    };
    const runs = { bearer: [] as number[], apiKey: [] as number[] };
    for (const which of ['bearer', 'apiKey', 'apiKey', 'bearer'] as const) {
      const run = await drive(which === 'bearer' ? bearerHeaders : keyHeaders);
      runs[which].push(run.rps);
      console.log(`    ${which.padEnd(9)} ${run.rps.toFixed(0)} req/s, p99 ${run.p99} ms`);
    }
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    console.log(`(e) FHIR read with a SMART access token ${mean(runs.bearer).toFixed(0)} req/s, with the API key ${mean(runs.apiKey).toFixed(0)} req/s, ` +
      `ratio ${(mean(runs.bearer) / mean(runs.apiKey)).toFixed(2)}  [goal >= 0.9]`);
  } finally {
    await http.close();
  }
}

/** fastify + a pg pool + the read's SQL (findResource in projections/fhir-resources/queries.ts), nothing else. */
async function startReference(connectionUri: string, employerId: string) {
  const pool = new pg.Pool({ connectionString: connectionUri, max: 10 });
  const fastify = Fastify();
  fastify.get<{ Params: { id: string } }>('/api/fhir/Patient/:id', async (request, reply) => {
    const { rows } = await pool.query({
      name: 'fhir.read',
      text: 'SELECT resource, erased, patient_id FROM fhir_resources WHERE employer_id = $1 AND resource_type = $2 AND id = $3',
      values: [employerId, 'Patient', request.params.id],
    });
    const resource = rows[0]?.resource;
    reply.type('application/fhir+json').header('etag', `W/"${resource.meta.versionId}"`).header('last-modified', new Date(resource.meta.lastUpdated).toUTCString());
    return resource;
  });
  const port = await freePort();
  await fastify.listen({ port, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${port}`, stop: async () => { await fastify.close(); await pool.end(); } };
}
