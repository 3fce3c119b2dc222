// The API server's metrics: requests and their latency by route template, method and status class;
// authentication refusals by code; and GET /metrics itself when the API serves it (src/metrics/scrape.ts
// says when). The route label is the template fastify matched (`/api/employer/webhooks/:webhookId`),
// never the URL, and `unmatched` for every path no route serves: the label sets stay bounded.
//
// Each route gets its own onResponse hook (added as it is declared), holding its series: a request
// costs no label lookup, only the status class's slot and a counter and histogram update.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Counter, Histogram } from 'prom-client';
import { LATENCY_BUCKETS_SECONDS, type Metrics } from '../metrics/registry.ts';
import { scrapeAuthorized, type ScrapeSettings } from '../metrics/scrape.ts';
import { sendServiceError } from './errors.ts';

export const UNMATCHED_ROUTE = 'unmatched';
const STATUS_CLASSES = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

type Series = { requests: Counter.Internal; duration: Histogram.Internal<string> };

export type RequestMetrics = {
  /** A 401 or 403 answered with `code` (an error the error handler turned into a response). */
  refused(code: string): void;
};

/** Installs the request hooks; call before any route is declared (routes declared earlier are not counted). */
export function recordRequests(fastify: FastifyInstance, metrics: Metrics): RequestMetrics {
  const requests = metrics.counter({ name: 'http_requests_total', help: 'HTTP requests answered, by route template, method and status class.', labelNames: ['route', 'method', 'status_class'] });
  const duration = metrics.histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request\'s arrival to its response, by route template, method and status class.',
    labelNames: ['route', 'method', 'status_class'],
    buckets: LATENCY_BUCKETS_SECONDS,
  });
  const refusals = metrics.counter({ name: 'http_auth_refusals_total', help: 'Requests refused 401 or 403 (authentication, role, scope, CSRF), by error code.', labelNames: ['code'] });

  /** The series of one route: per method, per status class, created at first use. */
  const seriesOf = (route: string) => {
    const byMethod: Record<string, Array<Series | undefined>> = Object.create(null);
    return (request: FastifyRequest, reply: FastifyReply) => {
      const status = reply.statusCode;
      const slot = status >= 100 && status < 600 ? (status / 100) | 0 : 0;
      const byClass = (byMethod[request.method] ??= []);
      let series = byClass[slot];
      if (!series) {
        const labels = { route, method: request.method, status_class: STATUS_CLASSES[slot]! };
        series = byClass[slot] = { requests: requests.labels(labels), duration: duration.labels(labels) };
      }
      series.requests.inc();
      series.duration.observe(reply.elapsedTime / 1000);
    };
  };

  fastify.addHook('onRoute', (route) => {
    const record = seriesOf(route.url);
    const onResponse = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      record(request, reply);
      done();
    };
    route.onResponse = route.onResponse === undefined ? [onResponse] : [...[route.onResponse].flat(), onResponse];
  });
  const unmatched = seriesOf(UNMATCHED_ROUTE);
  fastify.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply);
    done();
  });
  return { refused: (code) => refusals.inc({ code }) };
}

/** GET /metrics on the API server, when METRICS_SECRET is set and METRICS_PORT is not (not an API operation: not in /api/openapi). */
export function serveMetricsOnApi(fastify: FastifyInstance, metrics: Metrics, settings: ScrapeSettings, requestMetrics: RequestMetrics) {
  if (settings.METRICS_SECRET === undefined || settings.METRICS_PORT !== undefined) return;
  const secret = settings.METRICS_SECRET;
  fastify.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!scrapeAuthorized(secret, request.headers.authorization)) {
      requestMetrics.refused('METRICS_SECRET_REQUIRED');
      reply.header('www-authenticate', 'Bearer');
      return sendServiceError(reply, request, { status: 401, code: 'METRICS_SECRET_REQUIRED', message: 'GET /metrics requires Authorization: Bearer with the METRICS_SECRET.', details: {} });
    }
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
