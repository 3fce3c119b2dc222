// Declares a route once: fastify registration, authentication, zod validation of params, query and
// body, and the OpenAPI entry all come from the same definition.
import type { OpenAPIRegistry, ResponseConfig } from '@asteasolutions/zod-to-openapi';
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { z, ZodType } from 'zod';
import type { AppContext } from '../app-context.ts';
import { authenticate } from '../auth/authenticate.ts';
import type { Principal, RouteAuth } from '../auth/principal.ts';
import { errorBodySchema, validationError, type ErrorShape } from './errors.ts';
import { idempotencyKeyHeaders, idempotencyResponses, runIdempotently } from './idempotency.ts';

type Infer<T> = T extends ZodType ? z.infer<T> : undefined;

export type RouteResponses = Record<number, { description: string; schema?: ZodType; contentType?: string }>;

export type RouteDefinition<Body, Params, Query, Auth extends RouteAuth> = {
  method: HTTPMethods;
  /** fastify path syntax: /api/employer/webhooks/:webhookId */
  url: string;
  summary: string;
  description?: string;
  /** Names the operation in /api/openapi (and so in generated clients); derived from method and url when absent. */
  operationId?: string;
  tags: string[];
  auth: Auth;
  body?: Body;
  params?: Params;
  querystring?: Query;
  responses: RouteResponses;
  errorShape?: ErrorShape;
  /** Largest request body in bytes, when the server's default (5 MiB) does not fit the route. */
  bodyLimit?: number;
  /**
   * Honours an Idempotency-Key header (src/http/idempotency.ts): for POSTs that create something. The
   * handler returns its body (or sends a body-less reply itself), so the response can be stored.
   */
  idempotent?: Auth extends { public: true } ? never : boolean;
  handler: (
    input: {
      body: Infer<Body>;
      params: Infer<Params>;
      query: Infer<Query>;
      principal: Auth extends { public: true } ? null : Principal;
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
  fastify.route({
    method: route.method,
    url: route.url,
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    config: { auth: route.auth, errorShape: route.errorShape },
    handler: async (request, reply) => {
      const principal = await authenticate(ctx, request, reply, route.auth);
      const params = parseInput(route.params, request.params, 'params');
      const query = parseInput(route.querystring, request.query, 'query');
      const body = parseInput(route.body, request.body, 'body');
      const execute = () => route.handler({ body, params, query, principal, request, reply } as never);
      const result = route.idempotent && principal ? await runIdempotently(ctx, request, reply, principal, route.errorShape, execute) : await execute();
      if (reply.sent) return reply;
      return result;
    },
  });
}

function parseInput(schema: ZodType | undefined, value: unknown, where: string): unknown {
  if (!schema) return undefined;
  const parsed = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (!parsed.success) throw validationError(parsed.error, where);
  return parsed.data;
}

function registerOpenApi(registry: OpenAPIRegistry, route: RouteDefinition<ZodType | undefined, ZodType | undefined, ZodType | undefined, RouteAuth>) {
  const responses: Record<string, ResponseConfig> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.schema ? { content: { [response.contentType ?? 'application/json']: { schema: response.schema } } } : {}),
    };
  }
  if (route.idempotent) {
    for (const [status, response] of Object.entries(idempotencyResponses)) {
      responses[status] ??= { ...response, content: { 'application/json': { schema: errorBodySchema } } };
    }
  }
  if (!route.errorShape) responses.default ??= { description: 'Error', content: { 'application/json': { schema: errorBodySchema } } };
  const security = 'public' in route.auth ? [] : route.auth.modes.map((mode) => ({ [mode === 'apiKey' ? 'apiKey' : 'session']: [] }));
  const methods = Array.isArray(route.method) ? route.method : [route.method];
  for (const method of methods) {
    registry.registerPath({
      method: method.toLowerCase() as 'get',
      path: route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}'),
      operationId: route.operationId ?? derivedOperationId(method, route.url),
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security,
      request: {
        ...(route.params ? { params: route.params as never } : {}),
        ...(route.querystring ? { query: route.querystring as never } : {}),
        ...(route.idempotent ? { headers: idempotencyKeyHeaders } : {}),
        ...(route.body ? { body: { content: { 'application/json': { schema: route.body } } } } : {}),
      },
      responses,
    });
  }
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
