// The fastify application: logging with redaction and request ids, one error handler, the capability
// route plugins, health checks, and the OpenAPI description generated from the routes' zod schemas.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { OpenApiGeneratorV31, type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Fastify, { LogController, type ConnectionError, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyPluginAsync, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { sql } from 'slonik';
import type { AppContext } from '../app-context.ts';
import { defaultErrorShape, fieldValidationError, sendServiceError, toServiceError, type ErrorShape, type ServiceError } from './errors.ts';
import { BODY_LIMIT_BYTES, formatBytes, HEADERS_LIMIT_BYTES } from './limits.ts';
import { recordRequests, serveMetricsOnApi } from './metrics.ts';
import { metricsServed } from '../metrics/scrape.ts';
import { registerSecuritySchemes } from './openapi.ts';
import { createRouteMethods } from './route-methods.ts';
import { traceRequests } from './request-spans.ts';
import { resolveTrustProxy } from './trust-proxy.ts';
import { runWithClientOrigin } from './client-origin.ts';

/**
 * A capability's routes. `services` is what the capability's start created in this process
 * (src/capability.ts), undefined for a capability that starts nothing.
 */
export type RoutePlugin<Services = unknown> = FastifyPluginAsync<{ ctx: AppContext; services: Services }>;

const READINESS_TIMEOUT_MS = 1500;

/** What GET /readyz reports of the projections (read by projections/status.ts). */
export type ProjectionReadiness = {
  /** Projections with events of their types waiting that have not moved for a minute. */
  stalled: string[];
  /** Pending events of the stalled projections, counted up to a limit. */
  lag: Record<string, number>;
  /** Parked events per projection that has any. */
  parked: Record<string, number>;
  /** Projections an operator paused (`cli projections pause`). */
  paused: string[];
};

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Error shapes of path prefixes (SCIM's envelope under /api/scim/v2), for errors raised before any
     * route is found: a path that does not decode, headers over the limit. Route plugins add theirs.
     */
    errorShapesByPrefix: Map<string, ErrorShape>;
  }
}

export const API_VERSION_INFO = { title: 'employer-integrations', version: '2026-02-01' };

/**
 * One log line per request, when it completes (fastify's default adds an "incoming request" line).
 * The line of an answered request holds only what the `req` serializer keeps (method, URL with its query
 * values redacted but for paging and options, address), the status and the time, none of which can
 * carry a secret or personal data (src/logger.ts); so it skips
 * the logger's redaction paths, which cost three quarters of the line (15 of 20 µs, measured). A line
 * with an error, and every other line, keeps them.
 */
class OneLinePerRequest extends LogController {
  readonly #accessLog: Logger;

  constructor(logger: Logger) {
    super();
    this.#accessLog = logger.child({}, { redact: [] });
  }

  override incomingRequest() {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    if (error) request.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else this.#accessLog.info({ reqId: request.id, req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request completed');
  }
}

export async function buildServer(
  ctx: AppContext,
  routes: Array<{ plugin: RoutePlugin; services: unknown }>,
  health: { projections: () => Promise<ProjectionReadiness> },
  apiTags: Readonly<Record<string, string>>,
): Promise<FastifyInstance> {
  const errorShapesByPrefix = new Map<string, ErrorShape>();
  const shapeForPath = (path: string) => [...errorShapesByPrefix].find(([prefix]) => path.startsWith(prefix))?.[1] ?? defaultErrorShape;
  const fastify = Fastify({
    loggerInstance: ctx.logger as FastifyBaseLogger,
    logController: new OneLinePerRequest(ctx.logger),
    trustProxy: resolveTrustProxy(ctx.config.TRUST_PROXY),
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    },
    bodyLimit: BODY_LIMIT_BYTES,
    // A client must send its headers, and its whole request, in bounded time (else 408 and the
    // connection closes). Node checks these every connectionsCheckingInterval (30 s by default).
    requestTimeout: ctx.config.HTTP_REQUEST_TIMEOUT_MS,
    http: {
      maxHeaderSize: HEADERS_LIMIT_BYTES,
      headersTimeout: ctx.config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: ctx.config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(ctx.config.HTTP_HEADERS_TIMEOUT_MS / 4)),
    },
    // Path parameters are bounded by each route's zod schema (400 naming the field, in the route's
    // shape); the router's own limit (414 in fastify's shape) is lifted to what the headers allow.
    routerOptions: { maxParamLength: HEADERS_LIMIT_BYTES },
    frameworkErrors: (error, request, reply) => sendServiceError(reply, request, toServiceError(error), shapeForPath(request.url)),
    clientErrorHandler: (error, socket) => answerClientError(error, socket, shapeForPath),
  });
  closeSilentConnectionsOnClose(fastify);
  // Before any route is declared: each route's hook holds its own series (./metrics.ts).
  const requestMetrics = metricsServed(ctx.config) ? recordRequests(fastify, ctx.metrics) : null;
  traceRequests(fastify);
  fastify.decorate('errorShapesByPrefix', errorShapesByPrefix);
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    runWithClientOrigin(request, done);
  });

  await fastify.register(fastifyCookie);
  // Form bodies (the SAML callback) are parsed into objects without a prototype (fast-querystring).
  await fastify.register(fastifyFormbody);
  // application/json as every other JSON media type (acceptJson).
  fastify.removeContentTypeParser('application/json');
  acceptJson(fastify, 'application/json');

  fastify.setErrorHandler((error, request, reply) => {
    const serviceError = (error as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? payloadTooLarge(request.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES) : toServiceError(error);
    if (serviceError.status >= 500) request.log.error({ err: error }, 'request failed');
    if (serviceError.status === 401 || serviceError.status === 403) requestMetrics?.refused(serviceError.code);
    return sendServiceError(reply, request, serviceError, request.routeOptions.config?.errorShape ?? defaultErrorShape);
  });
  // No route answers: 405 with Allow when other methods are served at the path, else 404; in the
  // shape of the path's prefix (an OperationOutcome under /api/fhir).
  const routeMethods = createRouteMethods();
  fastify.addHook('onRoute', (route) => routeMethods.add(route.method, route.url));
  fastify.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = routeMethods.at(path);
    if (allowed.length === 0) return sendServiceError(reply, request, { status: 404, code: 'NOT_FOUND', message: `No route ${request.method} ${path}.`, details: {} }, shapeForPath(path));
    reply.header('allow', allowed.join(', '));
    return sendServiceError(reply, request, { status: 405, code: 'METHOD_NOT_ALLOWED', message: `${request.method} is not served at ${path}; allowed: ${allowed.join(', ')}.`, details: { allowed } }, shapeForPath(path));
  });

  fastify.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  fastify.get('/readyz', async (_request, reply) => {
    try {
      // Answered within READINESS_TIMEOUT_MS even when connecting hangs or every connection is busy.
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer')), READINESS_TIMEOUT_MS);
        ctx.db.slonik.query(sql.unsafe`SELECT 1`).then(resolve, reject).finally(() => clearTimeout(timer));
      });
    } catch {
      return reply.status(503).send({ status: 'unavailable', database: 'unreachable' });
    }
    const { stalled, lag, parked, paused } = await health.projections();
    const pausedProjections = paused.length > 0 ? { pausedProjections: paused } : {};
    if (stalled.length > 0) return reply.status(503).send({ status: 'degraded', database: 'ok', stalledProjections: stalled, lag, parkedEvents: parked, ...pausedProjections });
    // Parked events are one tenant's problem, not this instance's, and a paused projection an
    // operator's decision: it stays in rotation (200), and monitoring reads `degraded` (every instance
    // would answer the same, so 503 would take them all out).
    if (Object.keys(parked).length > 0 || paused.length > 0) return { status: 'degraded', database: 'ok', stalledProjections: [], lag, parkedEvents: parked, ...pausedProjections };
    return { status: 'ok', database: 'ok' };
  });

  if (requestMetrics) serveMetricsOnApi(fastify, ctx.metrics, ctx.config, requestMetrics);

  for (const { plugin, services } of routes) await fastify.register(plugin, { ctx, services });

  const document = openApiDocument(ctx.openapi, ctx.config.PUBLIC_BASE_URL, apiTags);
  fastify.get('/api/openapi', async () => document);
  await fastify.register(fastifySwagger, { mode: 'static', specification: { document: document as never } });
  await fastify.register(fastifySwaggerUi, { routePrefix: '/docs' });
  return fastify;
}

/**
 * Parses bodies of `contentType` as JSON, as fastify parses application/json but naming what it
 * refuses: a key `__proto__` (also written with escapes such as `\u005f_proto__`), or `constructor`
 * holding `prototype`, is 400 VALIDATION_ERROR. Every JSON media type the service accepts is
 * registered through here (SCIM's application/scim+json, FHIR's application/fhir+json), so all are
 * parsed alike; route.ts then refuses every other key naming a prototype member.
 */
export function acceptJson(fastify: FastifyInstance, contentType: string): void {
  const parse = fastify.getDefaultJsonParser('error', 'error');
  fastify.addContentTypeParser(contentType, { parseAs: 'string' }, (request, body, done) => {
    const text = body as string; // parseAs: 'string'
    parse(request, text, (error, value) => {
      if (error && isJson(text)) {
        const message = 'a key __proto__, or constructor holding prototype, names a prototype member: no key or path segment may.';
        done(fieldValidationError('body', message));
      } else done(error, value);
    });
  });
}

/** Whether `text` is JSON at all (only asked about a body the strict parser refused). */
function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * 413 naming the route's limit. fastify refuses a body over it before parsing (by Content-Length, or
 * while reading); the route's error shape applies (SCIM envelope with status "413" on SCIM routes).
 */
function payloadTooLarge(limitBytes: number): ServiceError {
  return {
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
    message: `The request body is too large: the limit is ${formatBytes(limitBytes)}.`,
    details: { limitBytes },
  };
}

/**
 * A request Node refused before fastify saw it (headers over HEADERS_LIMIT_BYTES, a timeout, broken
 * HTTP): answered in the shape of the path's routes, as far as the request line could be read.
 */
function answerClientError(error: ConnectionError, socket: Socket, shapeForPath: (path: string) => ErrorShape) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const serviceError: ServiceError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? { status: 431, code: 'HEADERS_TOO_LARGE', message: `The request line and headers are too large: the limit is ${formatBytes(HEADERS_LIMIT_BYTES)}.`, details: { limitBytes: HEADERS_LIMIT_BYTES } }
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? { status: 408, code: 'REQUEST_TIMEOUT', message: 'The request did not arrive in time.', details: {} }
        : { status: 400, code: 'BAD_REQUEST', message: 'The request is not valid HTTP.', details: {} };
  const rawPacket: unknown = error.rawPacket; // a Buffer at run time, whatever fastify's type says
  const path = /^[A-Z]+ (\S+)/.exec(Buffer.isBuffer(rawPacket) ? rawPacket.toString('latin1', 0, 2048) : '')?.[1] ?? '/';
  const { body, contentType } = shapeForPath(path)(serviceError, { id: randomUUID() });
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${serviceError.status} ${STATUS_CODES[serviceError.status]}\r\nContent-Type: ${contentType ?? 'application/json'}\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}

/**
 * The OpenAPI description of every route registered so far through defineRoute (served at /api/openapi;
 * typed client of the console). `tags` describes each tag the operations use (src/capabilities.ts).
 */
export function openApiDocument(registry: OpenAPIRegistry, publicBaseUrl: string, tags: Readonly<Record<string, string>>) {
  registerSecuritySchemes(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      ...API_VERSION_INFO,
      // Not open source: an SPDX LicenseRef names the terms the employer's contract sets.
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      contact: { name: 'employer-integrations API reference', url: `${publicBaseUrl}/docs` },
      description:
        'Enterprise integration interface: API keys, webhooks, SSO/SCIM, FHIR, cohorts, exports. Errors on employer routes have the shape of the Error schema.\n\n' +
        'No name in a request may reach an object\'s prototype: a body or query key, a path parameter, or a segment of a path a value holds (SCIM PATCH paths, ' +
        'filters and attribute lists, FHIR search parameter names; segments end at `.`, `:`, `[` and `]`) that is `prototype` or a member of Object.prototype ' +
        '(`__proto__`, `constructor`, `toString`, `valueOf`, `hasOwnProperty`, ...), in any case, is 400: VALIDATION_ERROR, or under /api/scim/v2 invalidPath ' +
        '(a PATCH path), invalidFilter (a filter) or invalidValue (anything else), under /api/fhir an OperationOutcome with issue code invalid.\n\n' +
        'Instants (date-times with a zone) are taken from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, with a zone offset under 16 hours: others are 400.',
    },
    servers: [{ url: publicBaseUrl }],
    tags: Object.entries(tags).map(([name, description]) => ({ name, description })),
  });
}

/**
 * A connection that never sent a byte (a browser's speculative preconnection) is neither idle nor busy
 * to Node: once close() has stopped the header-timeout checks that would end it, it holds shutdown open
 * for ever. Requests in flight still finish; only those silent connections are closed.
 */
function closeSilentConnectionsOnClose(fastify: FastifyInstance) {
  const connections = new Set<Socket>();
  fastify.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  fastify.addHook('preClose', async () => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  });
}
