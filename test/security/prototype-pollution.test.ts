// No user input ever names an object's prototype (issue 20, item 1 and "What to build"). First the
// attack as it was reproduced: a SCIM PATCH whose path or value walks scim-patch into Object.prototype
// and leaves another tenant's API key there, so that anonymous calls authenticate as that tenant.
// Then the process hardening (--disable-proto=delete, sealed prototypes), and a property test that
// sends `__proto__`, `prototype` and `constructor` in every spelling and position through every route
// fastify serves, in every content type. After each request no prototype has changed, anonymous
// calls are still 401, and no answer is a 5xx.
//
// Deterministic: the seed is fixed (FUZZ_SEED overrides it) and printed with any failure.
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_NODE_FLAGS } from '../../scripts/service-node-flags.mjs';
import { createApiKey, keyHeaders } from '../support/api-keys.ts';
import { errorShapeProblem } from '../support/error-shapes.ts';
import { FUZZ_SEED, knownParamValues, realisticValues, requestArbitrary, SCIM_PREFIX, startFuzzTarget, type Caller, type FuzzRequest, type FuzzTarget, type Operation } from '../support/openapi-fuzz.ts';
import { registeredRoutes } from '../support/route-list.ts';
import type { TestService } from '../support/service.ts';
import { enableScim, GROUP_SCHEMA, PATCH_OP, scimClient, USER_SCHEMA, type ScimClient } from '../scim/scim-client.ts';

/** The names that reach a prototype from an ordinary object. */
const PROTOTYPE_NAMES = ['__proto__', 'prototype', 'constructor'] as const;

/** The prototypes every object of the process shares, and what they hold before any service starts. */
const SHARED_PROTOTYPES = { 'Object.prototype': Object.prototype, 'Array.prototype': Array.prototype, 'Function.prototype': Function.prototype };
const namesOf = (prototypes: typeof SHARED_PROTOTYPES) => Object.fromEntries(Object.entries(prototypes).map(([name, prototype]) => [name, Reflect.ownKeys(prototype).map(String).sort()]));
const BEFORE = namesOf(SHARED_PROTOTYPES);

/** What changed in the shared prototypes since the file started: names they hold, and what fresh objects inherit. */
function pollutionOf(): string[] {
  const now = namesOf(SHARED_PROTOTYPES);
  const changed = Object.keys(now).filter((name) => JSON.stringify(now[name]) !== JSON.stringify(BEFORE[name]));
  return [...changed, ...inheritedPollution()];
}

/** Every property a polluted prototype would show on fresh objects (the attack's, and the property test's). */
function inheritedPollution(): string[] {
  const probes = { object: {} as Record<string, unknown>, array: [] as unknown as Record<string, unknown>, function: (() => {}) as unknown as Record<string, unknown> };
  return Object.entries(probes).flatMap(([kind, probe]) => ['x-api-key', 'x-api-version', 'polluted'].filter((name) => probe[name] !== undefined).map((name) => `${kind}.${name}`));
}

const FHIR_READ_WRITE = ['fhir:read', 'fhir:write'] as const;

let target: FuzzTarget;
let service: TestService;

beforeAll(async () => {
  target = await startFuzzTarget();
  service = target.service;
}, 120_000);
afterAll(async () => service?.stop());

describe('issue 20 item 1: SCIM PATCH through scim-patch into Object.prototype', () => {
  /** Tenant A: the attacker, with SCIM on and an API key of its own whose value it plants. */
  let attacker: { scim: ScimClient; rawKey: string; userId: string; groupId: string };
  /** Tenant B: a valid key of another tenant. */
  let otherKeyHeaders: Record<string, string>;
  /** Tenant C: an administrator's session and the patients it holds. */
  let victim: { cookie: string; patientIds: string[] };

  const createPatients = async (headers: Record<string, string>, count: number) => {
    const ids: string[] = [];
    for (let index = 0; index < count; index++) {
      const response = await fetch(`${service.url}/api/fhir/Patient`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/fhir+json' },
        body: JSON.stringify({ resourceType: 'Patient', name: [{ family: `Patient${index}`, given: ['Test'] }] }),
      });
      expect(response.status).toBe(201);
      ids.push(((await response.json()) as { id: string }).id);
    }
    return ids;
  };

  beforeAll(async () => {
    const a = await service.createTenant();
    const { rawKey } = await createApiKey(service, a, { scopes: [...FHIR_READ_WRITE] });
    await createPatients(keyHeaders(rawKey), 3);
    const scim = scimClient(service, await enableScim(service, a));
    const user = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'attacker@example.test', emails: [{ value: 'attacker@example.test', primary: true }] });
    const group = await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Attackers', members: [{ value: user.body.id }] });
    attacker = { scim, rawKey, userId: user.body.id, groupId: group.body.id };

    const b = await service.createTenant();
    otherKeyHeaders = keyHeaders((await createApiKey(service, b, { scopes: ['fhir:read'] })).rawKey);

    const c = await service.createTenant();
    const cWriter = keyHeaders((await createApiKey(service, c, { scopes: [...FHIR_READ_WRITE] })).rawKey);
    victim = { cookie: c.cookie, patientIds: await createPatients(cWriter, 2) };
  }, 120_000);

  type Attack = { resource: 'Users' | 'Groups'; operation: string; scimType: 'invalidPath' | 'invalidValue' };
  /** The operations, with `planted` the JSON of the value planted: tenant A's real key, so that a missing header would be inherited as A's. */
  const attacks = (planted: string): Record<string, Attack> => {
    const on = (resource: Attack['resource'], operation: string, scimType: Attack['scimType']): Attack => ({ resource, operation, scimType });
    return {
      // As reproduced: replace and add, on Users and Groups.
      'replace constructor.prototype on a User': on('Users', `{"op":"replace","path":"constructor.prototype","value":${planted}}`, 'invalidPath'),
      'replace constructor.prototype on a Group': on('Groups', `{"op":"replace","path":"constructor.prototype","value":${planted}}`, 'invalidPath'),
      'add constructor.prototype on a User': on('Users', `{"op":"add","path":"constructor.prototype","value":${planted}}`, 'invalidPath'),
      'add constructor.prototype on a Group': on('Groups', `{"op":"add","path":"constructor.prototype","value":${planted}}`, 'invalidPath'),
      // The other spellings of the same walk.
      'add __proto__': on('Users', `{"op":"add","path":"__proto__","value":${planted}}`, 'invalidPath'),
      'replace with the core schema URN before constructor.prototype': on('Users', `{"op":"replace","path":"urn:ietf:params:scim:schemas:core:2.0:User:constructor.prototype","value":${planted}}`, 'invalidPath'),
      'replace with constructor in a value filter': on('Users', '{"op":"replace","path":"emails[constructor pr].value","value":"x@example.test"}', 'invalidPath'),
      'a path-less add whose value is keyed constructor.prototype': on('Users', `{"op":"add","value":{"constructor.prototype":${planted}}}`, 'invalidValue'),
      'a path-less replace whose value holds constructor then prototype': on('Groups', `{"op":"replace","value":{"constructor":{"prototype":${planted}}}}`, 'invalidValue'),
      'a path-less add whose value holds __proto__, written with JSON escapes': on('Users', `{"op":"add","value":{"\\u005f\\u005fproto\\u005f\\u005f":${planted}}}`, 'invalidValue'),
      'an add whose nested value holds constructor then prototype': on('Users', `{"op":"add","path":"name","value":{"givenName":"x","constructor":{"prototype":${planted}}}}`, 'invalidValue'),
      'an add whose value in an array holds toString': on('Users', `{"op":"add","path":"emails","value":[{"value":"x@example.test","toString":${planted}}]}`, 'invalidValue'),
    };
  };

  /** What the pollution broke: anonymous calls as A, C's session reading A's patients, B's key refused. */
  async function expectNothingPolluted() {
    expect(pollutionOf()).toEqual([]);

    const anonymous = await fetch(`${service.url}/api/fhir/Patient`);
    expect(anonymous.status).toBe(401);

    const otherTenant = await fetch(`${service.url}/api/fhir/Patient`, { headers: otherKeyHeaders });
    expect(otherTenant.status).toBe(200);
    expect(((await otherTenant.json()) as { total: number }).total).toBe(0);

    const victimSession = await fetch(`${service.url}/api/fhir/Patient?_count=100`, { headers: service.sessionHeaders(victim.cookie) });
    expect(victimSession.status).toBe(200);
    const bundle = (await victimSession.json()) as { entry?: { resource: { id: string } }[] };
    expect((bundle.entry ?? []).map((entry) => entry.resource.id).sort()).toEqual([...victim.patientIds].sort());
  }

  it.each(Object.keys(attacks('{}')))('refuses a PATCH with %s: 400 in the SCIM envelope, the resource unchanged, and no prototype, credential or tenant touched', async (name) => {
    const attack = attacks(JSON.stringify({ 'x-api-key': attacker.rawKey, 'x-api-version': 'v1' }))[name]!;
    const id = attack.resource === 'Users' ? attacker.userId : attacker.groupId;
    const before = await attacker.scim.request('GET', `/${attack.resource}/${id}`);

    const response = await fetch(`${service.url}${SCIM_PREFIX}/${attack.resource}/${id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${attacker.scim.token}`, 'content-type': 'application/scim+json' },
      body: `{"schemas":["${PATCH_OP}"],"Operations":[${attack.operation}]}`,
    });
    const body = (await response.json()) as { status: string; scimType: string; detail: string };
    expect(response.status).toBe(400);
    expect(body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '400', scimType: attack.scimType });
    expect(body.detail).toContain('names a prototype member');

    expect(await attacker.scim.request('GET', `/${attack.resource}/${id}`)).toMatchObject({ status: 200, body: before.body });
    await expectNothingPolluted();
  });
});

describe('the process defends in depth', () => {
  it('runs the service, and these tests, with --disable-proto=delete: Object.prototype has no __proto__ accessor', () => {
    expect(SERVICE_NODE_FLAGS).toContain('--disable-proto=delete');
    expect(process.execArgv).toContain('--disable-proto=delete');
    expect(Object.getOwnPropertyDescriptor(Object.prototype, '__proto__')).toBeUndefined();
  });

  it('answers a request with headers named __proto__, constructor and toString like any other, and keeps serving', async () => {
    const { port } = new URL(service.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write('GET /api/fhir/Patient HTTP/1.1\r\nHost: localhost\r\n__proto__: {"x-api-key":"planted"}\r\nconstructor: planted\r\ntoString: planted\r\nConnection: close\r\n\r\n'),
      );
      let received = '';
      socket.on('data', (chunk) => (received += chunk));
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect(pollutionOf()).toEqual([]);
  });

  it('seals Object.prototype, Array.prototype and Function.prototype when the service starts: nothing can be added to them', () => {
    for (const [name, prototype] of Object.entries(SHARED_PROTOTYPES)) {
      expect(Object.isSealed(prototype), name).toBe(true);
      expect(() => Object.assign(prototype, { 'x-api-key': 'planted' }), name).toThrow(TypeError);
    }
    expect(pollutionOf()).toEqual([]);
  });
});

/** A request as the property test sends it: the URL as written (percent-encoding included), headers, and a body as text. */
type PoisonedRequest = { method: string; path: string; query: [string, string][]; headers: Record<string, string>; body: { text: string; contentType: string } | null };

/** A name spelled as a client could send it where names are read: plain, in dotted or bracketed paths, after a SCIM URN, as a FHIR chain or modifier, in another case. */
const nameSpelling = fc.constantFrom(...PROTOTYPE_NAMES).chain((name) =>
  fc.constantFrom(
    name,
    name.toUpperCase(),
    `${name}.polluted`,
    'constructor.prototype',
    'constructor.prototype.polluted',
    `a.${name}.polluted`,
    `a[${name}][polluted]`,
    `${name}[polluted]`,
    `urn:ietf:params:scim:schemas:core:2.0:User:${name}`,
    `subject:Patient.${name}`,
    `name:${name}`,
    `${name}:exact`,
    `_has:Observation:patient:${name}`,
  ),
);

/** Such a name inside a value that is read as names: SCIM filters, attribute lists and PATCH paths, FHIR references. */
const valueSpelling = nameSpelling.chain((name) =>
  fc.constantFrom(name, `${name} pr`, `${name} eq "1"`, `emails[${name} pr]`, `userName,${name}`, `${name}.value`, `meta.${name} gt "2024-01-01T00:00:00Z"`, `Patient/${name}`),
);

/** Every byte as %XX (underscores too), or only what a URL must encode. */
const urlEncoding = fc.constantFrom(
  (text: string) => Array.from(new TextEncoder().encode(text), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  (text: string) => encodeURIComponent(text),
);

/** `"__proto__"` as a JSON key written with \u escapes (`"\u005f\u005fproto\u005f\u005f"`, `"\u0063onstructor"`). */
function escapedKeys(json: string): string {
  const escape = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;
  return json.replace(/"(__proto__|prototype|constructor)"/g, (_whole, name: string) => `"${escape(name[0]!)}${name.slice(1, -1)}${escape(name.at(-1)!)}"`);
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** `value` with the key `name` added `depth` objects down (into the first nested object, or the first object of an array), as an own property even for `__proto__`. */
function withKeyAt(value: unknown, depth: number, name: string, planted: unknown): unknown {
  if (Array.isArray(value) && value.length > 0) return [withKeyAt(value[0], depth, name, planted), ...value.slice(1)];
  const object: Record<string, unknown> = isObject(value) ? { ...value } : {};
  if (depth === 0) return Object.defineProperty(object, name, { value: planted, enumerable: true, writable: true, configurable: true });
  const nested = Object.keys(object).find((key) => isObject(object[key]) || (Array.isArray(object[key]) && isObject((object[key] as unknown[])[0]))) ?? 'nested';
  object[nested] = withKeyAt(object[nested], depth - 1, name, planted);
  return object;
}

/** `value` with its string leaf number `which` (counted round) replaced by `text`; `text` itself when it has none. */
function withStringAt(value: unknown, which: number, text: string): unknown {
  const leaves: string[] = [];
  const collect = (node: unknown, at: string) => {
    if (typeof node === 'string') leaves.push(at);
    else if (Array.isArray(node)) node.forEach((entry, index) => collect(entry, `${at}/${index}`));
    else if (isObject(node)) for (const [key, entry] of Object.entries(node)) collect(entry, `${at}/${key}`);
  };
  collect(value, '');
  if (leaves.length === 0) return text;
  const chosen = leaves[which % leaves.length];
  const replace = (node: unknown, at: string): unknown => {
    if (at === chosen) return text;
    if (Array.isArray(node)) return node.map((entry, index) => replace(entry, `${at}/${index}`));
    if (isObject(node)) return Object.fromEntries(Object.entries(node).map(([key, entry]) => [key, replace(entry, `${at}/${key}`)]));
    return node;
  };
  return replace(value, '');
}

const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/scim+json', 'application/fhir+json'];

/** Where a request carries the name. */
const POSITIONS = ['path parameter', 'query name', 'query value', 'body key', 'body value', 'form body key', 'SCIM PATCH operation', 'header'] as const;
type Position = (typeof POSITIONS)[number];

/** The spellings every route gets in every position (the other spellings come at random): those that walked into Object.prototype. */
const CORE_SPELLINGS = ['constructor.prototype', '__proto__', 'constructor', 'prototype'];

/** How one request is poisoned: the position, the name (and a value holding it), and how it is written. */
type Poison = { position: Position; name: string; value: string; encode: (text: string) => string; depth: number; contentType: string; which: number; escaped: boolean };

const poisonArbitrary = (positions: readonly Position[]): fc.Arbitrary<Poison> =>
  fc.record({
    position: fc.constantFrom(...positions),
    name: nameSpelling,
    value: valueSpelling,
    encode: urlEncoding,
    depth: fc.nat(3),
    contentType: fc.constantFrom(...JSON_TYPES),
    which: fc.nat(20),
    escaped: fc.boolean(),
  });

/** The poisons every route gets: each position with each core spelling, in turn percent-encoded, \u-escaped and in each JSON content type. */
function corePoisons(positions: readonly Position[]): Poison[] {
  return positions.flatMap((position) =>
    CORE_SPELLINGS.map((name, index) => ({
      position,
      name,
      value: index % 2 === 0 ? name : `${name} pr`,
      encode: index % 2 === 0 ? encodeURIComponent : (text: string) => Array.from(new TextEncoder().encode(text), (byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
      depth: index % 3,
      contentType: JSON_TYPES[index % JSON_TYPES.length]!,
      which: index,
      escaped: index % 2 === 1,
    })),
  );
}

/** A request to `url` as the route's documentation allows (`base`), with the name in one position. */
function poisonedRequest(method: string, url: string, operation: Operation, base: FuzzRequest, poison: Poison): PoisonedRequest & { position: string } {
  const { position, name, value, encode, depth, contentType, which, escaped } = poison;
  const params: Record<string, string> = { ...base.params };
  const query: [string, string][] = Object.entries(base.query).map(([key, text]) => [encodeURIComponent(key), encodeURIComponent(text)]);
  const headers: Record<string, string> = {};
  const json = base.body && 'json' in base.body ? base.body.json : undefined;
  let body: PoisonedRequest['body'] = json === undefined ? null : { text: JSON.stringify(json), contentType: 'application/json' };
  const planted = { polluted: true, 'x-api-key': 'planted' };
  let where: string = position;
  switch (position) {
    case 'path parameter': {
      const parameters = pathParametersOf(url);
      const parameter = parameters[which % parameters.length]!;
      params[parameter] = encode(name);
      where = `path parameter ${parameter}`;
      break;
    }
    case 'query name':
      query.push([encode(name), 'polluted']);
      break;
    case 'query value': {
      const documented = (operation.parameters ?? []).filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name);
      const parameter = documented.length > 0 ? documented[which % documented.length]! : ['filter', 'attributes', '_sort', 'sortBy'][which % 4]!;
      query.push([encodeURIComponent(parameter), encode(value)]);
      where = `query value of ${parameter}`;
      break;
    }
    case 'body key': {
      const text = JSON.stringify(withKeyAt(json, depth, name, planted));
      body = { text: escaped ? escapedKeys(text) : text, contentType };
      where = `body key at depth ${depth}`;
      break;
    }
    case 'body value':
      body = { text: JSON.stringify(withStringAt(json, which, value)), contentType };
      break;
    case 'form body key':
      body = { text: `${encode(name)}=polluted&${encode(`${name}[x-api-key]`)}=planted`, contentType: 'application/x-www-form-urlencoded' };
      break;
    case 'SCIM PATCH operation': {
      // The name as an operation's path (add, replace), or as the key of a path-less value.
      const operations = [{ op: 'replace', path: name, value: planted }, { op: 'add', path: name, value: planted }, { op: 'add', value: { [name]: planted } }];
      body = { text: JSON.stringify({ schemas: [PATCH_OP], Operations: [operations[which % operations.length]] }), contentType };
      break;
    }
    case 'header':
      // Header names are tokens: no brackets, colons or blanks.
      headers[PROTOTYPE_NAMES[which % PROTOTYPE_NAMES.length]!] = 'planted';
      headers['x-api-version'] = name;
      break;
  }
  const path = url.replace(/:(\w+)|\*/g, (_match, parameter: string | undefined) => params[parameter ?? '*'] ?? 'x');
  // fetch sends no body with GET.
  return { method, path, query, headers, body: method === 'GET' ? null : body, position: where };
}

/** The path parameters of a route (`*` for a wildcard). */
function pathParametersOf(url: string): string[] {
  return [...url.matchAll(/:(\w+)|\*/g)].map((match) => match[1] ?? '*');
}

describe('prototype names in every spelling and position, through every route and content type', () => {
  it('answers each without a 5xx, in the documented error shape, with every prototype unchanged and anonymous calls still 401', async () => {
    const { document, callers } = target;
    const routes = registeredRoutes(service.server!).filter((route) => route.method !== 'OPTIONS');
    // The router's list holds at least what /api/openapi documents: a parse of it cannot come out short.
    const documented = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    expect(routes.map((route) => `${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`)).toEqual(expect.arrayContaining(documented));

    const failures: string[] = [];
    const statuses = new Map<string, number>();
    let requests = 0;
    let property = 0;
    routes: for (const route of routes) {
      const openApiPath = route.url.replace(/:(\w+)/g, '{$1}');
      const operation = document.paths[openApiPath]?.[route.method.toLowerCase()];
      const isScim = route.url.startsWith(SCIM_PREFIX);
      const isPublic = !isScim && (operation?.security?.length ?? 0) === 0;
      const positions = POSITIONS.filter((position) => position !== 'path parameter' || pathParametersOf(route.url).length > 0);
      const base = requestArbitrary(route.method.toLowerCase(), operation ?? {}, document, realisticValues(target.known), knownParamValues(target.known), ['valid']);
      let examplesGiven = false;
      for (const caller of callers) {
        if (caller.kind === 'scim' && !isScim) continue;
        const meant = isScim ? caller.kind === 'scim' : isPublic ? caller.kind === 'anonymous' : caller.kind !== 'anonymous';
        const seed = FUZZ_SEED + property++;
        // The core poisons once per route, as the first caller it is meant for; random ones for every caller.
        const [sample] = fc.sample(base, { seed, numRuns: 1 });
        const examples: [FuzzRequest, Poison][] = meant && !examplesGiven && sample ? corePoisons(positions).map((poison): [FuzzRequest, Poison] => [sample, poison]) : [];
        examplesGiven ||= examples.length > 0;
        const result = await fc.check(
          fc.asyncProperty(base, poisonArbitrary(positions), async (request, poison) => {
            const poisonedOne = poisonedRequest(route.method, route.url, operation ?? {}, request, poison);
            requests++;
            const { status, problem } = await send(poisonedOne, caller);
            const key = `${caller.kind} ${Math.floor(status / 100)}xx`;
            statuses.set(key, (statuses.get(key) ?? 0) + 1);
            if (problem) throw new Error(`${poisonedOne.position} (${JSON.stringify(poison.name)}): ${problem}`);
          }),
          { seed, numRuns: examples.length + (meant ? 6 : 2), examples, endOnFailure: true },
        );
        if (result.failed) {
          const [request, poison] = result.counterexample ?? [];
          const shown = poison ? JSON.stringify(poisonedRequest(route.method, route.url, operation ?? {}, request!, poison)) : '';
          failures.push(`${route.method} ${route.url} as ${caller.name} (seed ${seed}): ${String((result.errorInstance as Error | undefined)?.message ?? result.errorInstance)}\n    request: ${shown.slice(0, 400)}`);
          // A polluted process fails every later check for no fault of the later routes.
          if (pollutionOf().length > 0) break routes;
        }
      }
    }
    console.log(`prototype names (seed ${FUZZ_SEED}): ${requests} requests through ${routes.length} routes; ${[...statuses].sort().map(([key, count]) => `${key}: ${count}`).join(', ')}`);
    expect(failures, `failures with FUZZ_SEED=${FUZZ_SEED}`).toEqual([]);
    // A name where no code reads names (a header, a free-text value) is no reason to refuse: callers with credentials got answers too.
    for (const kind of ['apiKey', 'session', 'scim']) expect(statuses.get(`${kind} 2xx`) ?? 0, `${kind} successes`).toBeGreaterThan(10);
  }, 600_000);

  /** Sends one request, then checks what it may have broken: its status, and the problem found (null when none). */
  async function send(request: PoisonedRequest, caller: Caller): Promise<{ status: number; problem: string | null }> {
    const search = request.query.map(([name, value]) => `${name}=${value}`).join('&');
    const response = await fetch(`${service.url}${request.path}${search ? `?${search}` : ''}`, {
      method: request.method,
      redirect: 'manual',
      headers: { ...caller.headers(), ...request.headers, ...(request.body ? { 'content-type': request.body.contentType } : {}) },
      ...(request.body ? { body: request.body.text } : {}),
    });
    const text = await response.text();
    const { status } = response;
    if (request.path === '/api/auth/logout' && status === 204) await target.relogin();
    if (status >= 500) return { status, problem: `${status}: ${text.slice(0, 300)}` };
    const shape = status >= 400 && request.path.startsWith('/api/') ? errorShapeProblem(request.path, status, response.headers.get('content-type') ?? '', text) : null;
    if (shape) return { status, problem: `${status} ${shape}` };
    const pollution = pollutionOf();
    if (pollution.length > 0) return { status, problem: `prototypes changed: ${pollution.join(', ')}` };
    const anonymous = await fetch(`${service.url}/api/fhir/Patient`);
    await anonymous.arrayBuffer();
    return { status, problem: anonymous.status === 401 ? null : `an anonymous call answered ${anonymous.status}` };
  }
});
