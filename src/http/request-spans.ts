// The span of each HTTP request, when tracing (src/tracing.ts): a child of the caller's `traceparent`
// if it sent one, named by method and route template, never by the URL (its path holds ids, its
// query may hold tokens). The request is served in the span's context, so its commands' spans and
// their events' metadata belong to its trace.
import { context } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { SpanStatusCode, startServerSpan, tracingEnabled, type Span } from '../tracing.ts';

export function traceRequests(fastify: FastifyInstance): void {
  if (!tracingEnabled()) return;
  const spans = new WeakMap<FastifyRequest, Span>();
  fastify.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? '(no route)';
    const started = startServerSpan(`${request.method} ${route}`, request.headers, { 'http.request.method': request.method, 'http.route': route, 'request.id': request.id });
    if (!started) return done();
    spans.set(request, started.span);
    // The rest of the request runs in the span's context (fastify keeps it across the body's reading).
    context.with(started.context, done);
  });
  const end = (request: FastifyRequest, statusCode: number | null) => {
    const span = spans.get(request);
    if (!span) return;
    spans.delete(request);
    if (statusCode !== null) span.setAttribute('http.response.status_code', statusCode);
    if (statusCode === null || statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  fastify.addHook('onResponse', (request, reply, done) => {
    end(request, reply.statusCode);
    done();
  });
  fastify.addHook('onRequestAbort', (request, done) => {
    end(request, null);
    done();
  });
}
