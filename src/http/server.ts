// The fastify application: logging with redaction and request ids, one error handler, the capability
// route plugins, health checks, and the OpenAPI description generated from the routes' zod schemas.
import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { OpenApiGeneratorV31, type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import { sql } from 'slonik';
import type { ProjectionReadiness } from '../../projections/status.ts';
import type { AppContext } from '../app-context.ts';
import { defaultErrorShape, sendServiceError, toServiceError } from './errors.ts';
import { resolveTrustProxy } from './trust-proxy.ts';

export type RoutePlugin = FastifyPluginAsync<{ ctx: AppContext }>;

export const API_VERSION_INFO = { title: 'employer-integrations', version: '2026-02-01' };

export async function buildServer(ctx: AppContext, plugins: RoutePlugin[], health: { projections: () => Promise<ProjectionReadiness> }): Promise<FastifyInstance> {
  const fastify = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    trustProxy: resolveTrustProxy(ctx.config.TRUST_PROXY),
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    },
    bodyLimit: 5 * 1024 * 1024,
    // A client must send its headers, and its whole request, in bounded time (else 408 and the
    // connection closes). Node checks these every connectionsCheckingInterval (30 s by default).
    requestTimeout: ctx.config.HTTP_REQUEST_TIMEOUT_MS,
    http: {
      headersTimeout: ctx.config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: ctx.config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(ctx.config.HTTP_HEADERS_TIMEOUT_MS / 4)),
    },
  });
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await fastify.register(fastifyCookie);
  await fastify.register(fastifyFormbody);

  fastify.setErrorHandler((error, request, reply) => {
    const serviceError = toServiceError(error);
    if (serviceError.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendServiceError(reply, request, serviceError, request.routeOptions.config?.errorShape ?? defaultErrorShape);
  });
  fastify.setNotFoundHandler((request, reply) =>
    sendServiceError(reply, request, { status: 404, code: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0]}.`, details: {} }),
  );

  fastify.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  fastify.get('/readyz', async (_request, reply) => {
    try {
      await ctx.db.slonik.query(sql.unsafe`SELECT 1`);
    } catch {
      return reply.status(503).send({ status: 'unavailable', database: 'unreachable' });
    }
    const { stalled, lag, parked } = await health.projections();
    if (stalled.length > 0) return reply.status(503).send({ status: 'degraded', database: 'ok', stalledProjections: stalled, lag, parkedEvents: parked });
    // Parked events are one tenant's problem, not this instance's: it stays in rotation (200), and
    // monitoring reads `degraded` (every instance would answer the same, so 503 would take them all out).
    if (Object.keys(parked).length > 0) return { status: 'degraded', database: 'ok', stalledProjections: [], lag, parkedEvents: parked };
    return { status: 'ok', database: 'ok' };
  });

  for (const plugin of plugins) await fastify.register(plugin, { ctx });

  const document = openApiDocument(ctx.openapi, ctx.config.PUBLIC_BASE_URL);
  fastify.get('/api/openapi', async () => document);
  await fastify.register(fastifySwagger, { mode: 'static', specification: { document: document as never } });
  await fastify.register(fastifySwaggerUi, { routePrefix: '/docs' });
  return fastify;
}

/** The OpenAPI description of every route registered so far through defineRoute (served at /api/openapi; typed client of the console). */
export function openApiDocument(registry: OpenAPIRegistry, publicBaseUrl: string) {
  registry.registerComponent('securitySchemes', 'apiKey', { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'API key (mt_live_...). Calls also send x-api-version.' });
  registry.registerComponent('securitySchemes', 'session', { type: 'apiKey', in: 'cookie', name: 'ei_session', description: 'Browser session from /api/auth/signin.' });
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      ...API_VERSION_INFO,
      description: 'Enterprise integration interface: API keys, webhooks, SSO/SCIM, FHIR, cohorts, exports. Errors on employer routes have the shape of the Error schema.',
    },
    servers: [{ url: publicBaseUrl }],
  });
}
