// /api/openapi is generated from the routes' zod schemas; an independent validator checks it.
import { validate } from '@readme/openapi-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TAGS } from '../../src/capabilities.ts';
import { SUPPORTED_API_VERSION_VALUES } from '../../src/http/versioning.ts';
import { startTestService, type TestService } from '../support/service.ts';

type Parameter = { name: string; in: string; required?: boolean; schema?: { enum?: string[] } };
type Response = { content?: Record<string, { schema?: { $ref?: string } }> };
type Operation = { operationId?: string; tags?: string[]; security?: Array<Record<string, string[]>>; parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: unknown }> }; responses: Record<string, Response> };
type Document = {
  info: { license?: { name: string; identifier?: string }; contact?: unknown };
  tags?: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, any>; securitySchemes: Record<string, unknown> };
};

/**
 * What Redocly's recommended rules still warn about, each for a reason: `rule pointer` -> why.
 * Anything else it reports fails the test.
 */
const JUSTIFIED_WARNINGS: Record<string, string> = {
  // The audit chain's public key is public, takes no input and always answers: there is no 4XX to document.
  'operation-4xx-response #/paths/~1api~1audit~1public-key/get/responses': 'nothing to refuse',
  // SMART discovery is public, takes no input and always answers, as the audit key does.
  'operation-4xx-response #/paths/~1api~1fhir~1.well-known~1smart-configuration/get/responses': 'nothing to refuse',
  // FHIR's own URL scheme: `bulk-export` is no resource type (400 on {resourceType}), and the router matches the static segment first.
  'no-ambiguous-paths #/paths/~1api~1fhir~1bulk-export~1{exportId}': 'FHIR [base]/[type]/_search beside the Bulk Data status URL',
};

const operationsOf = (document: Document) =>
  Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ at: `${method.toUpperCase()} ${path}`, path, ...operation })));

describe('the OpenAPI description', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.stop());

  it('is a valid OpenAPI 3.1 document covering the registered routes', async () => {
    const response = await fetch(`${service.url}/api/openapi`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } };
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    for (const route of service.server!.printRoutes({ commonPrefix: false }).matchAll(/(\/api\/[^\s(]+)/g)) {
      const path = route[1]!.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      if (path === '/api/openapi') continue;
      expect(Object.keys(document.paths), `${path} is documented`).toContain(path);
    }
    expect(document.components.schemas.Error).toBeDefined();
  });

  it('names and tags every operation, each name once', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as { paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>> };
    const operations = Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ at: `${method.toUpperCase()} ${path}`, ...operation })));
    expect(operations.length).toBeGreaterThan(30);
    expect(operations.filter((operation) => !operation.operationId || !/^[a-z][A-Za-z0-9]*$/.test(operation.operationId)).map((operation) => operation.at)).toEqual([]);
    expect(operations.filter((operation) => (operation.tags ?? []).length === 0).map((operation) => operation.at)).toEqual([]);
    const ids = operations.map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operations.find((operation) => operation.at === 'GET /api/employer/webhooks/{webhookId}/deliveries')?.operationId).toBe('getEmployerWebhooksByWebhookIdDeliveries');
  });

  it('passes Redocly\'s recommended rules: no error, and no warning but those named in JUSTIFIED_WARNINGS', async () => {
    const source = await (await fetch(`${service.url}/api/openapi`)).text();
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config: await createConfig({ extends: ['recommended'] }) });
    const found = problems.map((problem) => ({ severity: problem.severity, at: `${problem.ruleId} ${problem.location[0]?.pointer}`, message: problem.message }));
    expect(found.filter((problem) => problem.severity !== 'warn' || !(problem.at in JUSTIFIED_WARNINGS))).toEqual([]);
    expect(found.map((problem) => problem.at).sort(), 'each justified warning still occurs').toEqual(Object.keys(JUSTIFIED_WARNINGS).sort());
  });

  it('declares x-api-version (required, the supported versions) on exactly the operations that take an API key', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as Document;
    const operations = operationsOf(document);
    const withKey = operations.filter((operation) => (operation.security ?? []).some((requirement) => 'apiKey' in requirement));
    expect(withKey.length).toBeGreaterThan(40);
    for (const operation of operations) {
      const header = operation.parameters?.find((parameter) => parameter.in === 'header' && parameter.name === 'x-api-version');
      if (withKey.includes(operation)) expect(header, operation.at).toMatchObject({ required: true, schema: { enum: [...SUPPORTED_API_VERSION_VALUES] } });
      else expect(header, operation.at).toBeUndefined();
    }
  });

  it('declares the credential each operation needs: SCIM routes the SCIM token, cron routes the cron secret, webhooks their signature', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as Document;
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['apiKey', 'cronSecret', 'platformToken', 'scimToken', 'session', 'smartToken', 'webhookSignature']);
    const schemesOf = (operation: Operation) => (operation.security ?? []).flatMap((requirement) => Object.keys(requirement)).sort().join(',');
    const operations = operationsOf(document);
    const scim = operations.filter((operation) => operation.path.startsWith('/api/scim/v2/'));
    expect(scim.length).toBeGreaterThanOrEqual(17);
    expect(scim.filter((operation) => schemesOf(operation) !== 'scimToken').map((operation) => operation.at)).toEqual([]);
    expect(operations.filter((operation) => operation.path.startsWith('/api/cron/')).map(schemesOf)).toEqual(['cronSecret', 'cronSecret']);
    expect(operations.filter((operation) => operation.path.startsWith('/api/platform/')).every((operation) => schemesOf(operation) === 'platformToken')).toBe(true);
    expect(schemesOf(document.paths['/api/employer/cohorts']!.get!)).toBe('apiKey,session');
    expect(schemesOf(document.paths['/api/employer/api-keys']!.get!)).toBe('session');
    const webhooks = Object.values(document.webhooks).map((item) => item.post!);
    expect(webhooks).toHaveLength(9);
    expect(webhooks.filter((operation) => !operation.operationId || schemesOf(operation) !== 'webhookSignature')).toEqual([]);
    expect(document.webhooks['tapering.proposed']!.post!.operationId).toBe('taperingProposedWebhook');
  });

  it('documents every operation\'s 4XX answers in the shape of its routes: Error, OperationOutcome under /api/fhir, ScimError under /api/scim/v2', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as Document;
    const shapeOf = (path: string) => (path === '/api/fhir' || path.startsWith('/api/fhir/') ? ['application/fhir+json', 'OperationOutcome']
      : path.startsWith('/api/scim/v2/') ? ['application/scim+json', 'ScimError']
      : path.startsWith('/api/oauth/') ? ['application/json', 'OAuthError'] : ['application/json', 'Error']);
    const wrong: string[] = [];
    for (const operation of operationsOf(document)) {
      const [contentType, schema] = shapeOf(operation.path);
      for (const [status, response] of Object.entries(operation.responses).filter(([status]) => /^4..$|^default$/.test(status))) {
        if (response.content?.[contentType!]?.schema?.$ref !== `#/components/schemas/${schema}`) wrong.push(`${operation.at} ${status}`);
      }
    }
    expect(wrong).toEqual([]);
    const statuses = (path: string, method: string) => Object.keys(document.paths[path]![method]!.responses).filter((status) => status.startsWith('4'));
    // An API key and a session, a path parameter, a body: 400, 401, 403, 404, 413, 429 (and the Idempotency-Key's 409, 422 on creations).
    expect(statuses('/api/employer/webhooks/{webhookId}', 'patch')).toEqual(['400', '401', '403', '404', '413', '429']);
    expect(statuses('/api/employer/webhooks', 'post')).toEqual(['400', '401', '403', '409', '413', '422', '429']);
    expect(statuses('/api/scim/v2/Users/{userId}', 'get')).toEqual(expect.arrayContaining(['400', '401', '404', '429']));
    // Declared where they apply: SCIM writes (uniqueness, If-Match), FHIR's conditional update.
    expect(statuses('/api/scim/v2/Users/{userId}', 'patch')).toEqual(expect.arrayContaining(['409', '412']));
    expect(statuses('/api/scim/v2/Groups/{groupId}', 'delete')).toEqual(expect.arrayContaining(['412']));
    expect(statuses('/api/fhir/{resourceType}/{id}', 'put')).toEqual(expect.arrayContaining(['412']));
    expect(statuses('/api/cron/integration-alerts', 'get')).toEqual(['401']);
    expect(statuses('/api/fhir/{resourceType}/{id}', 'get')).toEqual(['400', '401', '403', '404', '429']);
  });

  it('describes every tag, names its license and contact, and references CohortPatient and the FHIR resource types', async () => {
    const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as Document;
    const used = new Set([...operationsOf(document), ...Object.values(document.webhooks).map((item) => item.post!)].flatMap((operation) => operation.tags ?? []));
    expect([...used].filter((tag) => !API_TAGS[tag]), 'tags without a description in API_TAGS (src/capabilities.ts)').toEqual([]);
    expect(document.tags?.filter((tag) => used.has(tag.name) && tag.description)).toHaveLength(used.size);
    expect(document.info.license).toEqual({ name: 'Proprietary', identifier: 'LicenseRef-Proprietary' });
    expect(document.info.contact).toMatchObject({ url: `${service.url}/docs` });

    const upload = document.paths['/api/employer/upload-cohort']!.post!.requestBody!.content['application/json']!.schema as { properties: { patients: { items: unknown } } };
    expect(upload.properties.patients.items).toEqual({ $ref: '#/components/schemas/CohortPatient' });
    expect(document.components.schemas.CohortPatient.required).toEqual(['email', 'firstName', 'lastName']);

    for (const type of ['Patient', 'CarePlan', 'Observation', 'DiagnosticReport', 'MedicationRequest']) {
      expect(document.components.schemas[type], type).toMatchObject({ properties: { resourceType: { enum: [type] } }, description: expect.stringContaining('https://hl7.org/fhir/R4/') });
    }
    const resourceOf = (path: string, method: string, status: string) => document.paths[path]![method]!.responses[status]!.content!['application/fhir+json']!.schema as any;
    expect(resourceOf('/api/fhir/{resourceType}/{id}', 'get', '200').oneOf.map((member: { $ref: string }) => member.$ref)).toContain('#/components/schemas/Patient');
    expect(resourceOf('/api/fhir/{resourceType}', 'get', '200')).toEqual({ $ref: '#/components/schemas/Bundle' });
    expect(resourceOf('/api/fhir/metadata', 'get', '200')).toEqual({ $ref: '#/components/schemas/CapabilityStatement' });
  });

  it('serves a readable API reference at /docs', async () => {
    const response = await fetch(`${service.url}/docs/`, { redirect: 'follow' });
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/swagger/i);
  });

  it('answers health and readiness', async () => {
    expect(await (await fetch(`${service.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', database: 'ok' });
  });

  it('answers a malformed JSON body with 400 in the error shape', async () => {
    const tenant = await service.createTenant();
    const response = await fetch(`${service.url}/api/auth/logout`, {
      method: 'POST',
      headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
      body: '{"not json',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'MALFORMED_JSON', requestId: expect.any(String) });
  });
});
