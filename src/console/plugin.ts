// Serves the admin console at / (same origin as the API, so the session cookie and the Origin check
// apply unchanged) under a strict Content-Security-Policy: scripts and styles only from this origin,
// nothing inline, no framing. The console calls the service only through the public API.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../app-context.ts';
import type { Capability } from '../capability.ts';
import { CONSOLE_DIST, ensureConsoleBundle } from './bundle.ts';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

async function consoleRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  if (await ensureConsoleBundle()) ctx.logger.info('admin console built');
  const [html, script, style] = await Promise.all(['index.html', 'app.js', 'app.css'].map((asset) => readFile(join(CONSOLE_DIST, asset))));
  const send = (reply: FastifyReply, body: Buffer, contentType: string) =>
    reply
      .header('content-type', contentType)
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      // Revalidated on every load: the files are small and a deploy must show at once.
      .header('cache-control', 'no-cache')
      .send(body);
  fastify.get('/', { schema: { hide: true } }, (_request, reply) => send(reply, html!, 'text/html; charset=utf-8'));
  fastify.get('/console/app.js', { schema: { hide: true } }, (_request, reply) => send(reply, script!, 'text/javascript; charset=utf-8'));
  fastify.get('/console/app.css', { schema: { hide: true } }, (_request, reply) => send(reply, style!, 'text/css; charset=utf-8'));
}

export const consoleCapability: Capability = { name: 'console', routes: [consoleRoutes] };
