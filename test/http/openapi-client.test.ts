// A client generated from /api/openapi calls one operation of each security scheme with nothing added
// by hand. openapi-typescript generates the types from the served document into a temporary directory
// (test/tools/openapi-typescript: an npm workspace, since it needs TypeScript 5's compiler API beside the
// project's TypeScript 7); a caller written against them is compiled with tsc and run with openapi-fetch.
// Each credential goes where the operation's `security` and its scheme say (header, cookie or bearer): a
// middleware reads them from the document. The x-api-version header is a typed parameter, its value the
// one the operation declares: the caller that leaves it out does not compile.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformToken } from '../../src/workflows/commands.ts';
import { createApiKey } from '../support/api-keys.ts';
import { accessToken, registerSmartClient } from '../support/smart-clients.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { enableScim } from '../scim/scim-client.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const CRON_SECRET = 'client-test-cron-secret-0123456789';

/** The generated client's caller: one call per security scheme, each with only that credential. */
const CALLER = `
import createClient, { type Middleware } from 'openapi-fetch';
import { readFileSync } from 'node:fs';
import type { paths } from './api.ts';

type Scheme = { type: 'apiKey'; in: 'header' | 'cookie'; name: string } | { type: 'http'; scheme: 'bearer' };
type Operation = { security?: Array<Record<string, string[]>>; parameters?: Array<{ name: string; in: string; schema: { enum?: string[] } }> };
type Input = {
  baseUrl: string;
  employerId: string;
  credentials: Record<string, string>;
  document: { paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, Scheme> } };
};
const input = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Input;

/** Sends the one credential given, as the scheme the operation declares for it says. */
function authenticateAs(name: string): Middleware {
  return {
    onRequest({ request, schemaPath }) {
      const operation = input.document.paths[schemaPath]![request.method.toLowerCase()]!;
      if (!(operation.security ?? []).some((requirement) => name in requirement)) throw new Error(name + ' is not a scheme of ' + schemaPath);
      const scheme = input.document.components.securitySchemes[name]!;
      const secret = input.credentials[name]!;
      if (scheme.type === 'http') request.headers.set('authorization', 'Bearer ' + secret);
      else if (scheme.in === 'cookie') request.headers.set('cookie', scheme.name + '=' + secret);
      else request.headers.set(scheme.name, secret);
      return request;
    },
  };
}
const clientAs = (name: string) => {
  const client = createClient<paths>({ baseUrl: input.baseUrl });
  client.use(authenticateAs(name));
  return client;
};

type ApiVersion = paths['/api/employer/cohorts']['get']['parameters']['header']['x-api-version'];
/** The value the operation's declared x-api-version parameter lists first. */
function declaredApiVersion(path: string, method: string): ApiVersion {
  const parameter = input.document.paths[path]![method]!.parameters!.find((one) => one.in === 'header' && one.name === 'x-api-version')!;
  return parameter.schema.enum![0] as ApiVersion;
}

const calls = {
  apiKey: await clientAs('apiKey').GET('/api/employer/cohorts', { params: { header: { 'x-api-version': declaredApiVersion('/api/employer/cohorts', 'get') }, query: {} } }),
  session: await clientAs('session').GET('/api/employer/api-keys'),
  scimToken: await clientAs('scimToken').GET('/api/scim/v2/Users', { params: { query: { count: 1 } } }),
  cronSecret: await clientAs('cronSecret').GET('/api/cron/integration-alerts'),
  // The operation also takes API keys, so the header is declared required; a token's call ignores it.
  smartToken: await clientAs('smartToken').GET('/api/fhir/{resourceType}', {
    params: { path: { resourceType: 'Patient' }, header: { 'x-api-version': declaredApiVersion('/api/fhir/{resourceType}', 'get') }, query: {} },
  }),
  platformToken: await clientAs('platformToken').POST('/api/platform/v1/employers/{employerId}/invoices', {
    params: { path: { employerId: input.employerId } },
    body: { number: 'INV-1', amountMinor: 1200, currency: 'EUR', period: { start: '2026-10-01', end: '2026-10-31' } },
  }),
};
// Without the declared header, an API-key call does not compile.
// @ts-expect-error x-api-version is a required header parameter
void (() => clientAs('apiKey').GET('/api/employer/cohorts', { params: { query: {} } }));

const cohorts: { cohorts: unknown[] } | undefined = calls.apiKey.data;
console.log(JSON.stringify({
  statuses: Object.fromEntries(Object.entries(calls).map(([name, call]) => [name, call.response.status])),
  cohorts: cohorts?.cohorts.length,
  invoiceNumber: calls.platformToken.data?.number,
}));
`;

describe('a client generated from /api/openapi', () => {
  let service: TestService;
  let directory: string;
  beforeAll(async () => {
    service = await startTestService({ env: { CRON_SECRET } });
    directory = await mkdtemp(join(tmpdir(), 'ei-openapi-client-'));
    await symlink(join(ROOT, 'node_modules'), join(directory, 'node_modules'));
  });
  afterAll(async () => {
    await service?.stop();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('compiles against the generated types and calls one operation of each security scheme, authenticated as the document says', async () => {
    const tenant = await service.createTenant();
    const credentials = {
      apiKey: (await createApiKey(service, tenant, { scopes: ['cohort:read'] })).rawKey,
      session: tenant.cookie.replace(/^ei_session=/, ''),
      scimToken: await enableScim(service, tenant),
      cronSecret: CRON_SECRET,
      smartToken: await accessToken(service, await registerSmartClient(service, tenant, { scopes: ['system/Patient.rs'] }), 'system/Patient.rs'),
      platformToken: (await createPlatformToken(service.ctx, { tenantId: null, actor: { type: 'system', id: 'test' } }, { name: 'client test', families: ['invoice'] })).token,
    };
    const document: unknown = await (await fetch(`${service.url}/api/openapi`)).json();
    await writeFile(join(directory, 'openapi.json'), JSON.stringify(document));
    await run(process.execPath, [join(ROOT, 'test/tools/openapi-typescript/generate.mjs'), join(directory, 'openapi.json'), join(directory, 'api.ts')]);
    await writeFile(join(directory, 'caller.ts'), CALLER);
    await writeFile(join(directory, 'input.json'), JSON.stringify({ baseUrl: service.url, employerId: tenant.employerId, credentials, document }));
    const compilerOptions = { strict: true, noEmit: true, module: 'nodenext', target: 'esnext', allowImportingTsExtensions: true, skipLibCheck: true, types: ['node'] };
    await writeFile(join(directory, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['caller.ts'] }));
    await writeFile(join(directory, 'package.json'), JSON.stringify({ type: 'module' }));

    const compiled = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', directory]).then(() => 'compiled', (error: { stdout: string }) => error.stdout);
    expect(compiled).toBe('compiled');
    const { stdout } = await run(process.execPath, [join(directory, 'caller.ts'), join(directory, 'input.json')], { cwd: directory });
    expect(JSON.parse(stdout)).toEqual({
      statuses: { apiKey: 200, session: 200, scimToken: 200, cronSecret: 200, smartToken: 200, platformToken: 201 },
      cohorts: 0,
      invoiceNumber: 'INV-1',
    });
  }, 60_000);
});
