// Route fuzzing: for every operation of the service's own /api/openapi document, fast-check generates
// valid, boundary (exactly at the documented maximum, empty, unicode) and invalid (wrong types,
// oversized, missing required, junk JSON, bodies over the byte limit) params, query strings and
// bodies, and sends them as every kind of caller. No answer may be a 5xx, every error body has its
// route's documented shape, and afterwards every projection has caught up with the event store (a
// value some read model cannot hold would stop its projection for good).
//
// Deterministic: the seed is fixed (FUZZ_SEED overrides it) and printed with any failure.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorShapeProblem } from '../support/error-shapes.ts';
import {
  boundExamples,
  bodyInit,
  FUZZ_SEED,
  knownParamValues,
  projectionsBehind,
  realisticValues,
  requestArbitrary,
  resolve,
  SCIM_PREFIX,
  startFuzzTarget,
  typesOf,
  urlOf,
  type Caller,
  type FuzzRequest,
  type JsonSchema,
  type KnownIds,
  type OpenApi,
} from '../support/openapi-fuzz.ts';
import type { TestService } from '../support/service.ts';

/** Requests per operation and caller: callers the route is meant for, and the others (refused early). */
const RUNS_FOR_MEANT_CALLER = 16;
const RUNS_FOR_OTHER_CALLER = 3;

describe('route fuzzing from /api/openapi', () => {
  let service: TestService;
  let document: OpenApi;
  let callers: Caller[];
  let known: KnownIds;
  let relogin: () => Promise<void>;

  beforeAll(async () => {
    ({ service, document, callers, known, relogin } = await startFuzzTarget());
  }, 60_000);
  afterAll(async () => service?.stop());

  it('documents a maximum length for every request string and a maximum size for every request array', () => {
    const unbounded: string[] = [];
    const visit = (schema: JsonSchema, where: string, seen: Set<JsonSchema>) => {
      const resolved = resolve(schema, document);
      if (seen.has(resolved)) return;
      seen.add(resolved);
      for (const alternative of resolved.anyOf ?? resolved.oneOf ?? []) visit(alternative, where, seen);
      const types = typesOf(resolved);
      if (types.includes('string') && resolved.maxLength === undefined) unbounded.push(`${where}: string without maxLength`);
      if (types.includes('array')) {
        if (resolved.maxItems === undefined) unbounded.push(`${where}: array without maxItems`);
        if (resolved.items) visit(resolved.items, `${where}[]`, seen);
      }
      for (const [key, property] of Object.entries(resolved.properties ?? {})) visit(property, `${where}.${key}`, seen);
    };
    for (const [template, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const at = `${method.toUpperCase()} ${template}`;
        for (const parameter of operation.parameters ?? []) visit(parameter.schema, `${at} ${parameter.in} ${parameter.name}`, new Set());
        const body = operation.requestBody?.content['application/json']?.schema;
        if (body) visit(body, `${at} body`, new Set());
      }
    }
    expect(unbounded).toEqual([]);
  });

  it('answers every generated request without a 5xx, in the documented error shape, and leaves every projection current', async () => {
    const hints = realisticValues(known);
    const knownParams = knownParamValues(known);
    const failures: string[] = [];
    const statuses = new Map<string, number>();
    let requests = 0;
    let property = 0;
    operations: for (const [template, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const isScim = template.startsWith(SCIM_PREFIX);
        const isPublic = !isScim && operation.security?.length === 0;
        for (const caller of callers) {
          if (caller.kind === 'scim' && !isScim) continue;
          const meant = isScim ? caller.kind === 'scim' : isPublic ? caller.kind === 'anonymous' : caller.kind !== 'anonymous';
          const seed = FUZZ_SEED + property++;
          const examples = meant ? boundExamples(method, operation, document, hints, knownParams, seed).map((example): [FuzzRequest] => [example]) : [];
          const result = await fc.check(
            fc.asyncProperty(requestArbitrary(method, operation, document, hints, knownParams), async (request) => {
              const init = bodyInit(request.body);
              const response = await fetch(urlOf(service.url, template, request), {
                method: method.toUpperCase(),
                redirect: 'manual',
                headers: { ...caller.headers(), ...init.headers },
                ...(init.body === undefined ? {} : { body: init.body }),
              });
              const text = await response.text();
              requests++;
              const key = `${caller.kind} ${Math.floor(response.status / 100)}xx`;
              statuses.set(key, (statuses.get(key) ?? 0) + 1);
              if (template === '/api/auth/logout' && response.status === 204) await relogin();
              if (response.status >= 500) throw new Error(`${response.status}: ${text.slice(0, 300)}`);
              if (response.status >= 400) {
                const problem = errorShapeProblem(template, response.status, response.headers.get('content-type') ?? '', text);
                if (problem) throw new Error(`${response.status} ${problem}`);
              }
            }),
            // fast-check counts the examples among numRuns.
            { seed, numRuns: examples.length + (meant ? RUNS_FOR_MEANT_CALLER : RUNS_FOR_OTHER_CALLER), examples, endOnFailure: true },
          );
          if (result.failed) {
            const example = result.counterexample?.[0] as FuzzRequest | undefined;
            const shown = example ? JSON.stringify({ ...example, body: JSON.stringify(example.body)?.slice(0, 300) }) : '';
            failures.push(`${method.toUpperCase()} ${template} as ${caller.name} (seed ${seed}): ${String((result.errorInstance as Error | undefined)?.message ?? result.errorInstance)}\n    request: ${shown}`);
          }
        }
        // A projection stuck now would make every later command wait out its timeout: stop here, naming the operation.
        const behind = await projectionsBehind(service);
        if (behind.length > 0) {
          failures.push(`after ${method.toUpperCase()} ${template}: projections stuck: ${behind.join(', ')}`);
          break operations;
        }
      }
    }
    console.log(`route fuzzing (seed ${FUZZ_SEED}): ${requests} requests; ${[...statuses].sort().map(([key, count]) => `${key}: ${count}`).join(', ')}`);
    expect(failures, `failures with FUZZ_SEED=${FUZZ_SEED}`).toEqual([]);
    // Callers with credentials got somewhere: their valid requests succeeded, not only refusals.
    for (const kind of ['apiKey', 'session', 'scim']) expect(statuses.get(`${kind} 2xx`) ?? 0, `${kind} successes`).toBeGreaterThan(10);

    expect(await projectionsBehind(service), 'projections that did not reach the last event').toEqual([]);
    const ready = await fetch(`${service.url}/readyz`);
    expect(ready.status).toBe(200);
  }, 240_000);
});
