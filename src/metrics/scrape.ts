// Where Prometheus reads a process's metrics (Prometheus text format). With METRICS_PORT, every process
// (any role) answers GET /metrics on a listener of its own, so the API port need not expose them; with
// only METRICS_SECRET, the API server answers GET /metrics (src/http/metrics.ts); with neither they are
// not served (404). When METRICS_SECRET is set, a scrape must carry `Authorization: Bearer <secret>`,
// on either listener.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './registry.ts';

export type ScrapeSettings = { METRICS_SECRET?: string | undefined; METRICS_PORT?: number | undefined };

/** Whether this process serves its metrics at all. */
export const metricsServed = (settings: ScrapeSettings) => settings.METRICS_SECRET !== undefined || settings.METRICS_PORT !== undefined;

/** Whether an Authorization header may scrape: compared in constant time (both sides hashed, so lengths match too). */
export function scrapeAuthorized(secret: string | undefined, authorization: string | undefined): boolean {
  if (secret === undefined) return true;
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '';
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(secret));
}

export type MetricsListener = { url: string; close(): Promise<void> };

/** The METRICS_PORT listener: GET /metrics, nothing else. */
export async function startMetricsListener(options: { metrics: Metrics; secret: string | undefined; host: string; port: number }): Promise<MetricsListener> {
  const { registry } = options.metrics;
  const server: Server = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') return void response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    if (request.method !== 'GET' && request.method !== 'HEAD') return void response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    if (!scrapeAuthorized(options.secret, request.headers.authorization)) {
      return void response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'text/plain' }).end('a bearer token (METRICS_SECRET) is required\n');
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
