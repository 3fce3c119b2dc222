// What the fuzz tests share (test/http/route-fuzz.test.ts, test/security/prototype-pollution.test.ts):
// the service set up for fuzzing, and fast-check arbitraries of requests generated from the service's
// own /api/openapi document (valid, boundary and invalid params, query strings and bodies).
import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { SCOPES } from '../../src/auth/principal.ts';
import { capabilities } from '../../src/capabilities.ts';
import { formatPosition, type Position } from '../../src/event-store/port.ts';
import { BODY_LIMIT_BYTES } from '../../src/http/limits.ts';
import { createScimCapability } from '../../src/scim/capability.ts';
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/event-types.ts';
import { createApiKey, keyHeaders } from './api-keys.ts';
import { startTestService, type TestService } from './service.ts';
import { enableScim, GROUP_SCHEMA, PATCH_OP, scimClient, USER_SCHEMA } from '../scim/scim-client.ts';

/** The fuzz tests' seed: fixed, so that a run repeats; FUZZ_SEED overrides it (failures print it). */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 20_260_201);
export const SCIM_PREFIX = '/api/scim/v2';
/** Refused by connection at once: targets and metadata URLs the fuzzer gives never reach anyone. */
const UNREACHABLE_HTTPS = 'https://127.0.0.1:9/fuzz';

export type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  format?: string;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
};
export type Parameter = { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: JsonSchema };
export type Operation = { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: JsonSchema }> }; security?: Array<Record<string, unknown>> };
export type OpenApi = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, JsonSchema> } };

export type Mode = 'valid' | 'boundary' | 'invalid';
/** A request body as sent: JSON of a value, or raw text with its content type. */
export type Body = { json: unknown } | { raw: string; contentType: string } | null;
export type FuzzRequest = { mode: Mode; params: Record<string, string>; query: Record<string, string>; body: Body };
export type Caller = { name: string; kind: 'anonymous' | 'apiKey' | 'session' | 'scim'; headers: () => Record<string, string> };

/** Strings that have broken services before: NUL, lone surrogates, astral characters, markup, paths. */
const NASTY_STRINGS = ['\u0000', 'a\u0000b', '\uD800', '\uDC00x', '𝒳𝒴', 'é', '\u202Eevil', ' ', '%00', '../..', "'; DROP TABLE users; --", '<script>', '${x}', '\\', 'null', '0'];

/** Values a property of this name takes in real calls, so valid requests also succeed often. */
export type Hints = Record<string, fc.Arbitrary<unknown>>;

export function realisticValues(known: KnownIds): Hints {
  const hints: Record<string, unknown[]> = {
    url: [UNREACHABLE_HTTPS],
    samlMetadataUrl: [UNREACHABLE_HTTPS],
    samlEntryPoint: [UNREACHABLE_HTTPS],
    events: [[...WEBHOOK_EVENT_TYPES], ['test.ping']],
    scopes: [[...SCOPES], ['webhook:manage']],
    schemas: [[USER_SCHEMA], [GROUP_SCHEMA], [PATCH_OP]],
    Operations: [
      [{ op: 'replace', path: 'active', value: false }],
      [{ op: 'replace', value: { displayName: 'Renamed', externalId: 'ext-1' } }],
      [{ op: 'add', path: 'members', value: [{ value: known.scimUserId }] }],
      [{ op: 'remove', path: `members[value eq "${known.scimUserId}"]` }],
    ],
    members: [[{ value: known.scimUserId }]],
    filter: ['userName eq "fuzz@example.test"', 'displayName co "a"', 'userName eq'],
    attributes: ['userName,emails', 'members'],
    excludedAttributes: ['members'],
    allowedIpCidrs: [['10.0.0.0/8', '::1']],
  };
  return {
    ...Object.fromEntries(Object.entries(hints).map(([name, values]) => [name, fc.constantFrom(...values)])),
    // Unique addresses: an e-mail is unique across employers.
    emails: fc.uuid().map((id) => [{ value: `${id}@example.test`, type: 'work', primary: true }]),
  };
}

export type KnownIds = { employerId: string; keyId: string; webhookId: string; deliveryId: string; scimUserId: string; groupId: string };

/** Ids that exist, so that valid requests reach the handlers' happy paths too. */
export function knownParamValues(known: KnownIds): Record<string, string[]> {
  return {
    employerId: [known.employerId],
    keyId: [known.keyId],
    webhookId: [known.webhookId],
    deliveryId: [known.deliveryId],
    userId: [known.scimUserId],
    groupId: [known.groupId],
    id: ['User', 'Group', USER_SCHEMA],
  };
}

export function resolve(schema: JsonSchema, document: OpenApi): JsonSchema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  return resolve(document.components.schemas[name]!, document);
}

export function typesOf(schema: JsonSchema): string[] {
  if (schema.enum) return ['enum'];
  if (Array.isArray(schema.type)) return schema.type;
  return schema.type ? [schema.type] : ['any'];
}

/** A string of exactly `length` UTF-16 code units, mixing one- and two-unit characters. */
function stringOfLength(length: number): fc.Arbitrary<string> {
  return fc.constantFrom('x', 'é', '𝒳').map((unit) => {
    if (unit.length === 1) return unit.repeat(length);
    return unit.repeat(Math.floor(length / 2)) + 'x'.repeat(length % 2);
  });
}

/** Anything JSON that is not of the schema's type (wrong types). */
const wrongType = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.constant({}), fc.array(fc.integer(), { maxLength: 3 }), fc.string({ maxLength: 5 }), fc.constant(1e308));

export function valueArbitrary(schema: JsonSchema, mode: Mode, document: OpenApi, hints: Hints, name: string, depth = 0): fc.Arbitrary<unknown> {
  const resolved = resolve(schema, document);
  const alternatives = resolved.anyOf ?? resolved.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((alternative) => valueArbitrary(alternative, mode, document, hints, name, depth)));
  const types = typesOf(resolved);
  const byType = types.map((type) => typedArbitrary(type, resolved, mode, document, hints, name, depth));
  const hinted = hints[name];
  if (mode === 'invalid') return fc.oneof({ weight: 3, arbitrary: fc.oneof(...byType) }, { weight: 1, arbitrary: wrongType });
  return hinted ? fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: fc.oneof(...byType) }) : fc.oneof(...byType);
}

function typedArbitrary(type: string, schema: JsonSchema, mode: Mode, document: OpenApi, hints: Hints, name: string, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case 'enum':
      return mode === 'invalid' ? fc.oneof(fc.constantFrom(...schema.enum!), fc.string({ maxLength: 8 })) : fc.constantFrom(...schema.enum!);
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return mode === 'valid' ? fc.boolean() : fc.oneof(fc.boolean(), fc.constantFrom('True', 'false', 'yes'));
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -1_000_000;
      const max = schema.maximum ?? 1_000_000;
      if (mode === 'valid') return fc.integer({ min, max });
      if (mode === 'boundary') return fc.constantFrom(min, max, 0);
      return fc.constantFrom(min - 1, max + 1, 1.5, Number.MAX_SAFE_INTEGER * 4, -0.0001);
    }
    case 'string':
      return stringArbitrary(schema, mode);
    case 'array': {
      const min = schema.minItems ?? 0;
      const max = schema.maxItems ?? 5;
      const itemOf = (itemMode: Mode) => valueArbitrary(schema.items ?? {}, itemMode, document, hints, `${name}[]`, depth + 1);
      const few = (item: fc.Arbitrary<unknown>) => fc.array(item, { minLength: min, maxLength: Math.min(max, Math.max(min, 4)) });
      /** `count` copies of one valid item: the largest arrays cost no generation time. */
      const copies = (count: number) => itemOf('valid').map((item) => Array.from({ length: count }, () => item));
      if (mode === 'valid' || depth > 2) return few(itemOf('valid'));
      if (mode === 'boundary') return fc.oneof(few(itemOf('boundary')), copies(max));
      // One item past the maximum, or valid items and one invalid one.
      return fc.oneof(copies(max + 1), fc.tuple(few(itemOf('valid')), itemOf('invalid')).map(([items, bad]) => [...items, bad]));
    }
    case 'object':
    case 'any': {
      if (!schema.properties) return depth > 2 ? fc.constant({}) : fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
      return objectArbitrary(schema, mode, document, hints, depth);
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringArbitrary(schema: JsonSchema, mode: Mode): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? UNBOUNDED_STRING;
  const wellFormed =
    schema.format === 'date-time'
      ? fc.integer({ min: Date.parse('2027-01-01'), max: Date.parse('2099-01-01') }).map((ms) => new Date(ms).toISOString())
      : schema.format === 'uri'
        ? fc.constant(UNREACHABLE_HTTPS)
        : (schema.pattern && matching(schema.pattern, max)) || fc.string({ minLength: min, maxLength: Math.min(max, Math.max(min, 24)) });
  if (mode === 'valid') return wellFormed;
  if (mode === 'boundary') {
    return fc.oneof(wellFormed, stringOfLength(max), stringOfLength(min), fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 30) }), fc.constantFrom(...NASTY_STRINGS));
  }
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(oversizedText(oversizedLength(max))) },
    { weight: 1, arbitrary: stringOfLength(max + 1) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
    { weight: 1, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  );
}

/** Strings matching a pattern, when fast-check can generate them (it cannot for lookaheads). */
function matching(pattern: string, maxLength: number): fc.Arbitrary<string> | null {
  try {
    return fc.stringMatching(new RegExp(pattern)).filter((text) => text.length <= maxLength);
  } catch {
    return null;
  }
}

function objectArbitrary(schema: JsonSchema, mode: Mode, document: OpenApi, hints: Hints, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const required = (schema.required ?? []).filter((key) => key in properties);
  const modelOf = (propertyMode: Mode) =>
    Object.fromEntries(Object.entries(properties).map(([key, property]) => [key, valueArbitrary(property, propertyMode, document, hints, key, depth + 1)]));
  const recordOf = (model: Record<string, fc.Arbitrary<unknown>>, requiredKeys: string[]) => fc.record(model, { requiredKeys }) as fc.Arbitrary<Record<string, unknown>>;
  if (mode !== 'invalid') return recordOf(modelOf(mode), required);
  // Invalid: one property invalid and the others valid (so the bound under test is the only fault),
  // a required property missing, or one nobody declared.
  const valid = recordOf(modelOf('valid'), required);
  const keys = Object.keys(properties);
  const oneInvalid =
    keys.length === 0
      ? valid
      : fc.constantFrom(...keys).chain((key) => recordOf({ ...modelOf('valid'), [key]: valueArbitrary(properties[key]!, 'invalid', document, hints, key, depth + 1) }, [...new Set([...required, key])]));
  return fc.oneof(
    { weight: 4, arbitrary: oneInvalid },
    { weight: 1, arbitrary: valid.chain((value) => (required.length === 0 ? fc.constant(value) : fc.constantFrom(...required).map((key) => omit(value, key)))) },
    { weight: 1, arbitrary: valid.map((value) => ({ ...value, undeclaredProperty: 'x' })) },
  );
}

function omit(value: Record<string, unknown>, key: string): Record<string, unknown> {
  const { [key]: _dropped, ...rest } = value;
  return rest;
}

const JUNK_BODIES: Body[] = [
  { raw: '{"unterminated', contentType: 'application/json' },
  { raw: '[1, 2, 3]', contentType: 'application/json' },
  { raw: 'null', contentType: 'application/json' },
  { raw: '"a string"', contentType: 'application/json' },
  { raw: '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}', contentType: 'application/json' },
  { raw: '', contentType: 'application/json' },
  { raw: 'hello', contentType: 'text/plain' },
  { raw: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' },
  { raw: `{"padding": "${'p'.repeat(BODY_LIMIT_BYTES)}"}`, contentType: 'application/json' },
  { raw: `${'['.repeat(100_000)}${']'.repeat(100_000)}`, contentType: 'application/json' },
  { raw: `{"schemas":["${PATCH_OP}"],"Operations":[{"op":"add","path":"members","value":${'['.repeat(5_000)}${']'.repeat(5_000)}}]}`, contentType: 'application/scim+json' },
];

/** Path segments that do not decode: bad percent-encoding, an encoded NUL, an encoded slash. */
const MALFORMED_PATH_SEGMENTS = ['%E0%A4%A', '%ff', '%00', '..%2F..%2F', '%'];

/** Percent-encodes a path segment; a lone surrogate (which no URL can carry) is sent as U+FFFD. */
export function encodeSegment(value: string): string {
  return encodeURIComponent(value.toWellFormed());
}

export function requestArbitrary(
  method: string,
  operation: Operation,
  document: OpenApi,
  hints: Hints,
  knownParams: Record<string, string[]>,
  modes: Mode[] = ['valid', 'boundary', 'invalid', 'invalid'],
): fc.Arbitrary<FuzzRequest> {
  const parameters = operation.parameters ?? [];
  const parametersIn = (where: 'path' | 'query', mode: Mode) => {
    const model: Record<string, fc.Arbitrary<string>> = {};
    for (const parameter of parameters.filter((candidate) => candidate.in === where)) {
      const generated = valueArbitrary(parameter.schema, mode, document, hints, parameter.name).map((value) => (typeof value === 'string' ? value : JSON.stringify(value)));
      if (where === 'query') {
        model[parameter.name] = generated;
        continue;
      }
      // Path parameters are sent percent-encoded as generated: known ids, generated values, malformed segments.
      const known = knownParams[parameter.name];
      const encoded = generated.map(encodeSegment);
      model[parameter.name] =
        mode === 'invalid'
          ? fc.oneof({ weight: 3, arbitrary: encoded }, { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_PATH_SEGMENTS) })
          : known
            ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known.map(encodeSegment)) }, { weight: 1, arbitrary: encoded })
            : encoded;
    }
    const required = parameters.filter((parameter) => parameter.in === where && (where === 'path' || parameter.required)).map((parameter) => parameter.name);
    return fc.record(model, { requiredKeys: required });
  };
  const bodySchema = operation.requestBody?.content['application/json']?.schema;
  const bodyArbitrary = (mode: Mode): fc.Arbitrary<Body> => {
    // fetch sends no body with GET; other methods without a documented body get junk ones too.
    if (!bodySchema) return mode === 'invalid' && method !== 'get' ? fc.constantFrom<Body>(null, ...JUNK_BODIES) : fc.constant(null);
    const json = valueArbitrary(bodySchema, mode, document, hints, '(body)').map((value): Body => ({ json: value }));
    return mode === 'invalid' ? fc.oneof({ weight: 4, arbitrary: json }, { weight: 1, arbitrary: fc.constantFrom(...JUNK_BODIES) }) : json;
  };
  return fc.constantFrom(...modes).chain((mode) =>
    fc.record({ mode: fc.constant(mode), params: parametersIn('path', mode), query: parametersIn('query', mode), body: bodyArbitrary(mode) }),
  );
}

/**
 * `length` CJK characters of a fixed pseudo-random sequence: 3 bytes each in UTF-8, and as
 * incompressible as the 4,000 random characters of the original defect (Postgres compresses long
 * index entries, so a repeated character would slip under the btree entry limit).
 */
function oversizedText(length: number): string {
  let state = (length * 2_654_435_761) >>> 0 || 1;
  const characters: string[] = [];
  for (let index = 0; index < length; index++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    characters.push(String.fromCharCode(0x4e00 + (state % 0x5000)));
  }
  return characters.join('');
}
/** What an undocumented maximum is taken to be (the test above reports the missing bound itself). */
export const UNBOUNDED_STRING = 10_000;

/** The longest over-long string tried: over 2,704 bytes (a btree entry's limit), within the body limit. */
function oversizedLength(maxLength: number): number {
  return Math.min(Math.max(maxLength * 10, 4_096), 300_000);
}

/**
 * Each bounded top-level body property, path and query parameter at its maximum and past it, with
 * everything else valid: every documented bound is tried on every run, not only when chance picks it.
 */
export function boundExamples(method: string, operation: Operation, document: OpenApi, hints: Hints, knownParams: Record<string, string[]>, seed: number): FuzzRequest[] {
  const [base] = fc.sample(requestArbitrary(method, operation, document, hints, knownParams, ['valid']), { seed, numRuns: 1 });
  if (!base) return [];
  const examples: FuzzRequest[] = [];
  /** The maximum length of a string-typed schema (UNBOUNDED_STRING when it documents none), else undefined. */
  const stringBound = (schema: JsonSchema) => {
    const resolved = resolve(schema, document);
    const alternatives = [resolved, ...(resolved.anyOf ?? []).map((alternative) => resolve(alternative, document))];
    const string = alternatives.find((alternative) => typesOf(alternative).includes('string'));
    return string ? (string.maxLength ?? UNBOUNDED_STRING) : undefined;
  };
  for (const parameter of operation.parameters ?? []) {
    const max = stringBound(parameter.schema);
    if (max === undefined || (parameter.in !== 'path' && parameter.in !== 'query')) continue;
    for (const length of [max, max + 1]) {
      const value = oversizedText(length);
      examples.push(parameter.in === 'path' ? { ...base, params: { ...base.params, [parameter.name]: encodeSegment(value) } } : { ...base, query: { ...base.query, [parameter.name]: value } });
    }
  }
  const bodySchema = operation.requestBody?.content['application/json']?.schema;
  const body = base.body && 'json' in base.body ? base.body.json : undefined;
  if (bodySchema && body !== null && typeof body === 'object' && !Array.isArray(body)) {
    for (const [key, property] of Object.entries(resolve(bodySchema, document).properties ?? {})) {
      const max = stringBound(property);
      const resolved = resolve(property, document);
      const values: unknown[] = [];
      if (max !== undefined) values.push(oversizedText(max), oversizedText(max + 1), oversizedText(oversizedLength(max)));
      if (resolved.maxItems !== undefined && resolved.items) {
        const [item] = fc.sample(valueArbitrary(resolved.items, 'valid', document, hints, `${key}[]`), { seed, numRuns: 1 });
        values.push(Array.from({ length: resolved.maxItems + 1 }, () => item));
      }
      for (const value of values) examples.push({ ...base, mode: 'invalid', body: { json: { ...body, [key]: value } } });
    }
  }
  return examples;
}

export function urlOf(baseUrl: string, template: string, request: FuzzRequest): string {
  const path = template.replace(/\{([^}]+)\}/g, (_match, name: string) => request.params[name] ?? '');
  const query = new URLSearchParams(request.query).toString();
  return `${baseUrl}${path}${query ? `?${query}` : ''}`;
}

export function bodyInit(body: Body): { headers: Record<string, string>; body?: string } {
  if (body === null) return { headers: {} };
  if ('json' in body) return { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body.json) ?? 'null' };
  return { headers: { 'content-type': body.contentType }, body: body.raw };
}

export type FuzzTarget = { service: TestService; document: OpenApi; callers: Caller[]; known: KnownIds; relogin: () => Promise<void> };

/**
 * The service as the fuzz tests call it: rate limits lifted (a 429 is valid but tests nothing), an
 * employer with an API key of every scope, a webhook with a delivery, an admin session, and a separate
 * employer with SCIM on, a SCIM user and a group (a fuzzed POST /api/employer/sso may rotate or revoke
 * its own employer's SCIM token); `relogin` signs the admin in again after a fuzzed logout.
 */
export async function startFuzzTarget(): Promise<FuzzTarget> {
  const service = await startTestService({
    env: { API_KEY_RATE_LIMIT_PER_MIN: '1000000', FHIR_RATE_LIMIT_PER_MIN: '1000000', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CRON_SECRET: 'fuzz-cron-secret-0123456789' },
    // The SCIM limits would answer most of the fuzzer's SCIM requests with 429 (valid, but untested).
    capabilities: capabilities.map((capability) =>
      capability.name === 'scim' ? createScimCapability({ rateLimits: { perToken: { perSecond: 100_000, burst: 100_000 }, failedAuthPerAddress: { perSecond: 100_000, burst: 100_000 } } }) : capability,
    ),
  });
  // The employer routes' tenant, and a separate SCIM tenant: a fuzzed POST /api/employer/sso may
  // rotate or revoke its own tenant's SCIM token.
  const tenant = await service.createTenant();
  const scimTenant = await service.createTenant();
  let cookie = tenant.cookie;
  const relogin = async () => {
    cookie = await service.signIn(tenant.employerId, tenant.adminUserId);
  };
  const { rawKey } = await createApiKey(service, tenant, { scopes: [...SCOPES], rateLimitPerMinute: 1_000_000 });
  const victimKey = await createApiKey(service, tenant, { scopes: ['webhook:manage'], name: 'fuzzed key' });
  const webhook = await fetch(`${service.url}/api/employer/webhooks`, {
    method: 'POST',
    headers: { ...service.sessionHeaders(cookie), 'content-type': 'application/json' },
    body: JSON.stringify({ url: UNREACHABLE_HTTPS, events: ['test.ping'] }),
  });
  const webhookId = ((await webhook.json()) as { id: string }).id;
  // A delivery in the log (the target refuses the connection; the attempt is recorded all the same).
  const testDelivery = await fetch(`${service.url}/api/employer/webhooks/${webhookId}/test`, { method: 'POST', headers: service.sessionHeaders(cookie) });
  const deliveryId = ((await testDelivery.json()) as { deliveryId: string }).deliveryId;
  const token = await enableScim(service, scimTenant);
  const scim = scimClient(service, token);
  const scimUser = await scim.request('POST', '/Users', { schemas: [USER_SCHEMA], userName: 'fuzz@example.test', emails: [{ value: 'fuzz@example.test', primary: true }] });
  const group = await scim.request('POST', '/Groups', { schemas: [GROUP_SCHEMA], displayName: 'Fuzzed', members: [{ value: scimUser.body.id }] });
  const known: KnownIds = {
    employerId: tenant.employerId,
    keyId: victimKey.id,
    webhookId,
    deliveryId,
    scimUserId: String(scimUser.body.id),
    groupId: String(group.body.id),
  };
  const callers: Caller[] = [
    { name: 'no credentials', kind: 'anonymous', headers: () => ({}) },
    { name: 'API key with every scope', kind: 'apiKey', headers: () => keyHeaders(rawKey) },
    { name: 'admin session', kind: 'session', headers: () => service.sessionHeaders(cookie) },
    { name: 'SCIM bearer token', kind: 'scim', headers: () => ({ authorization: `Bearer ${token}` }) },
  ];
  const document = (await (await fetch(`${service.url}/api/openapi`)).json()) as OpenApi;
  return { service, document, callers, known, relogin };
}

/**
 * The projections that do not reach the store's last event within the waiter's bound (the commands'
 * read-your-writes timeout): one stuck on a value it cannot write stays behind for good.
 */
export async function projectionsBehind(service: TestService): Promise<string[]> {
  const head = await lastPosition(service);
  const behind = await Promise.all(
    service.projections.map(async ({ name }) => ((await service.ctx.waitForReadModels(head, [name])) ? null : `${name} (last event ${formatPosition(head)})`)),
  );
  return behind.filter((name) => name !== null);
}

async function lastPosition(service: TestService): Promise<Position> {
  const row = await service.ctx.db.slonik.one(sql.type(z.object({ commit: z.string(), prepare: z.string() }))`
    SELECT transaction_id::text AS commit, global_position::text AS prepare FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1`);
  return { commit: BigInt(row.commit), prepare: BigInt(row.prepare) };
}
