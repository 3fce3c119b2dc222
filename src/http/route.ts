// Declares a route once: fastify registration, authentication, zod validation of params, query and
// body, and the OpenAPI entry all come from the same definition.
import type { OpenAPIRegistry, ResponseConfig } from '@asteasolutions/zod-to-openapi';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { z, ZodType } from 'zod';
import type { AppContext } from '../app-context.ts';
import { authenticate } from '../auth/authenticate.ts';
import { sessionRolesOf, type PlatformPrincipal, type Principal, type RouteAuth } from '../auth/principal.ts';
import { defaultErrorShape, fieldValidationError, validationError, type ErrorShape } from './errors.ts';
import { idempotencyKeyHeaders, idempotencyResponses, runIdempotently } from './idempotency.ts';
import { jsonBodyBudgetHook, type JsonBodyBudget } from './json-budget.ts';
import { JSON_DEPTH_MAX, JSON_TOO_DEEP, JSON_VALUES_MAX } from './limits.ts';
import { acceptsApiKey, apiVersionHeaders, derivedErrorResponses, errorResponse, securityOf } from './openapi.ts';
import { prototypeNameIn, prototypeNameMessage } from './prototypes.ts';

type Infer<T> = T extends ZodType ? z.infer<T> : undefined;

export type RouteResponses = Record<number, { description: string; schema?: ZodType; contentType?: string }>;

export type RouteDefinition<Body, Params, Query, Auth extends RouteAuth> = {
  method: HTTPMethods;
  /** fastify path syntax: /api/employer/webhooks/:webhookId */
  url: string;
  /** Other spellings of `url` answering the same, not in /api/openapi (SCIM's list endpoints with a trailing slash). */
  aliases?: string[];
  summary: string;
  description?: string;
  /** Names the operation in /api/openapi (and so in generated clients); derived from method and url when absent. */
  operationId?: string;
  tags: string[];
  auth: Auth;
  body?: Body;
  /** The body's schema for /api/openapi only, when the handler parses the body (or its items) itself: SCIM, whose refusals carry their own scimType; the cohort upload, which lists every bad row. */
  documentedBody?: ZodType;
  params?: Params;
  querystring?: Query;
  responses: RouteResponses;
  errorShape?: ErrorShape;
  /** Largest request body in bytes, when the server's default (BODY_LIMIT_BYTES, 1 MiB) does not fit the route. */
  bodyLimit?: number;
  /** What a JSON body may hold, counted before it is parsed (src/http/json-budget.ts), when JSON_VALUES_MAX values do not fit the route. */
  bodyBudget?: JsonBodyBudget;
  /**
   * Honours an Idempotency-Key header (src/http/idempotency.ts): for POSTs that create something. The
   * handler returns its body (or sends a body-less reply itself), so the response can be stored.
   */
  idempotent?: Auth extends { public: true } | { checkedByRoute: string } ? never : boolean;
  handler: (
    input: {
      body: Infer<Body>;
      params: Infer<Params>;
      query: Infer<Query>;
      principal: Auth extends { public: true } | { checkedByRoute: string } ? null : Auth extends { platformFamily: string } ? PlatformPrincipal : Principal;
      request: FastifyRequest;
      reply: FastifyReply;
    },
  ) => Promise<unknown>;
};

export function defineRoute<Body extends ZodType | undefined, Params extends ZodType | undefined, Query extends ZodType | undefined, Auth extends RouteAuth>(
  fastify: FastifyInstance,
  ctx: AppContext,
  route: RouteDefinition<Body, Params, Query, Auth>,
): void {
  registerOpenApi(ctx.openapi, route);
  const principals = new WeakMap<FastifyRequest, Principal | PlatformPrincipal | null>();
  for (const url of [route.url, ...(route.aliases ?? [])]) fastify.route({
    method: route.method,
    url,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    config: { auth: route.auth, errorShape: route.errorShape },
    // Callers are authenticated before their body is read: a body costs nothing until its sender is known.
    onRequest: async (request, reply) => void principals.set(request, await authenticate(ctx, request, reply, route.auth)),
    preParsing: jsonBodyBudgetHook(route.bodyBudget ?? { values: JSON_VALUES_MAX }),
    handler: async (request, reply) => {
      const principal = principals.get(request) ?? null;
      assertStorableInput(request.params, 'params');
      assertStorableInput(request.query, 'query');
      assertStorableInput(request.body, 'body');
      const params = parseInput(route.params, request.params, 'params');
      const query = parseInput(route.querystring, request.query, 'query');
      const body = parseInput(route.body, request.body, 'body');
      const execute = () => route.handler({ body, params, query, principal, request, reply } as never);
      const result = route.idempotent && principal
        ? await runIdempotently(ctx, request, reply, idempotencyOwner(principal, params), route.errorShape, execute)
        : await execute();
      if (reply.sent) return reply;
      return result;
    },
  });
}

/**
 * Idempotency keys belong to an employer: the caller's, or for a platform token (which acts for every
 * employer) the one its route names in the path (`employerId`).
 */
function idempotencyOwner(principal: Principal | PlatformPrincipal, params: unknown): { employerId: string; caller: string } {
  switch (principal.kind) {
    case 'session':
      return { employerId: principal.employerId, caller: `user:${principal.userId}` };
    case 'apiKey':
      return { employerId: principal.employerId, caller: `apiKey:${principal.keyId}` };
    case 'smartClient':
      return { employerId: principal.employerId, caller: `smartClient:${principal.clientId}` };
    case 'platformToken':
      return { employerId: String((params as { employerId?: unknown } | undefined)?.employerId), caller: `platformToken:${principal.tokenId}` };
  }
}

function parseInput(schema: ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const parsed = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (!parsed.success) throw validationError(parsed.error, where);
  return parsed.data;
}

/**
 * Refuses, whatever the route's schema, what no read model can hold: NUL characters (Postgres text and
 * jsonb refuse them), unpaired UTF-16 surrogates (not UTF-8) and JSON nested deeper than
 * JSON_DEPTH_MAX (later code walks values recursively; so does this, never deeper than the limit);
 * and any property name, or path parameter, with a segment that names a prototype member
 * (./prototypes.ts): code reading the input by those names would reach shared prototypes.
 * On every request's path: the field's path is only put together for a refusal.
 */
function assertStorableInput(input: unknown, where: 'params' | 'query' | 'body'): void {
  const path: string[] = [where];
  const refuse = (message: string) => {
    const field = path.join('.');
    throw fieldValidationError(field, message);
  };
  const storable = (text: string) => !text.includes('\u0000') && text.isWellFormed();
  const visit = (value: unknown, depth: number): void => {
    if (typeof value === 'string') {
      if (!storable(value)) refuse('must not contain NUL characters or unpaired surrogates');
      // A path parameter names a resource (`/api/fhir/:resourceType`): a name like any other.
      const prototypeName = where === 'params' ? prototypeNameIn(value) : undefined;
      if (prototypeName !== undefined) refuse(prototypeNameMessage(prototypeName));
      return;
    }
    if (value === null || typeof value !== 'object') return;
    if (depth >= JSON_DEPTH_MAX) refuse(JSON_TOO_DEEP);
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        path.push(String(index));
        visit(value[index], depth + 1);
        path.pop();
      }
      return;
    }
    for (const key of Object.keys(value)) {
      if (!storable(key)) refuse('property names must not contain NUL characters or unpaired surrogates');
      path.push(key);
      const prototypeName = prototypeNameIn(key);
      if (prototypeName !== undefined) refuse(prototypeNameMessage(prototypeName));
      visit((value as Record<string, unknown>)[key], depth + 1);
      path.pop();
    }
  };
  visit(input, 0);
}

function registerOpenApi(registry: OpenAPIRegistry, route: RouteDefinition<ZodType | undefined, ZodType | undefined, ZodType | undefined, RouteAuth>) {
  const shape = route.errorShape ?? defaultErrorShape;
  const documentedBody = route.documentedBody ?? route.body;
  const derived: Record<string, string> = {
    ...(route.idempotent ? idempotencyResponses : {}),
    ...derivedErrorResponses({
      auth: route.auth,
      hasPathParams: route.params !== undefined,
      hasInput: Boolean(route.params ?? route.querystring ?? documentedBody),
      hasBody: documentedBody !== undefined,
      bodyLimit: route.bodyLimit,
      bodyValues: (route.bodyBudget ?? { values: JSON_VALUES_MAX }).values,
    }),
  };
  const responses: Record<string, ResponseConfig> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    // A refusal the route declares joins those every route of its kind gives with the same status.
    responses[status] = Number(status) >= 400 && !response.schema ? errorResponse([response.description, derived[status]].filter(Boolean).join('; or '), shape) : {
      description: response.description,
      ...(response.schema ? { content: { [response.contentType ?? 'application/json']: { schema: response.schema } } } : {}),
    };
  }
  for (const [status, description] of Object.entries(derived)) responses[status] ??= errorResponse(description, shape);
  responses.default ??= errorResponse('Any other error, in the same body: 503 DATABASE_UNAVAILABLE (with Retry-After) when the database is unavailable or busy', shape);
  const headers = [...(route.idempotent ? [idempotencyKeyHeaders] : []), ...(acceptsApiKey(route.auth) ? [apiVersionHeaders] : [])];
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  for (const method of methods) {
    registry.registerPath({
      method: method.toLowerCase() as 'get',
      path: route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}'),
      operationId: route.operationId ?? derivedOperationId(method, route.url),
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security: securityOf(route.auth),
      ...authorizationExtensions(route.auth),
      request: {
        ...(route.params ? { params: route.params as never } : {}),
        ...(route.querystring ? { query: route.querystring as never } : {}),
        ...(headers.length > 0 ? { headers: headers.reduce((all, more) => all.extend(more.shape)) } : {}),
        ...(documentedBody ? { body: { content: { 'application/json': { schema: documentedBody } } } } : {}),
      },
      responses,
    });
  }
}

/**
 * The route's declared authorization as operation extensions of /api/openapi, beside `security` (which
 * says how to authenticate): `x-required-scope` (an API key's scope, and a session's by its role),
 * `x-roles` (the session roles that may call it) and `x-platform-family`. Clients read what a
 * credential needs; test/security/authorization-matrix.test.ts derives every caller's answer from them.
 */
function authorizationExtensions(auth: RouteAuth): Record<`x-${string}`, unknown> {
  if ('public' in auth || 'checkedByRoute' in auth) return {};
  if ('platformFamily' in auth) return { 'x-platform-family': auth.platformFamily };
  return {
    ...(auth.scope ? { 'x-required-scope': auth.scope } : {}),
    ...(auth.modes.includes('session') ? { 'x-roles': sessionRolesOf(auth) } : {}),
  };
}

/**
 * `GET /api/employer/webhooks/:webhookId/deliveries` -> `getEmployerWebhooksByWebhookIdDeliveries`: the
 * method, then each path segment after /api in camel case, parameters as `By<Name>`.
 * test/http/openapi.test.ts checks that every operation's id is unique.
 */
function derivedOperationId(method: string, url: string): string {
  const words = url
    .split('/')
    .filter((segment, index) => segment !== '' && !(index === 1 && segment === 'api'))
    .map((segment) => (segment.startsWith(':') ? `By${capitalise(segment.slice(1))}` : segment.split(/[^A-Za-z0-9]+/).map(capitalise).join('')));
  return method.toLowerCase() + words.join('');
}

function capitalise(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1);
}
