// Builds the admin console: the client types from the service's own OpenAPI description
// (console/generated/api.d.ts), then the bundle (console/dist), and prints the JavaScript's size
// gzipped. Run by `npm install` (prepare) and by `npm run typecheck`; the service also bundles at
// start-up when the bundle is stale (src/console/bundle.ts).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import Fastify from 'fastify';
import type { AppContext } from '../src/app-context.ts';
import { API_TAGS, capabilities } from '../src/capabilities.ts';
import { loadConfig } from '../src/config.ts';
import { buildConsoleBundle, CONSOLE_DIST, CONSOLE_ROOT } from '../src/console/bundle.ts';
import { openApiDocument } from '../src/http/server.ts';
import { API_VERSION_HEADER } from '../src/http/versioning.ts';
import { openApiTypes } from './openapi-types.ts';

const BUDGET_GZIP_BYTES = 200 * 1024;

/**
 * The document /api/openapi serves, without a database: route registration only declares routes
 * (handlers never run here), so it needs nothing of the context but the registry and the configuration.
 * The console's own routes are left out: they are no API, and registering them would bundle.
 */
async function describeApi() {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent' });
  const ctx = { config, openapi: new OpenAPIRegistry() } as AppContext;
  const fastify = Fastify();
  // What buildServer decorates its instance with and route plugins use while registering.
  fastify.decorate('errorShapesByPrefix', new Map());
  for (const plugin of capabilities.filter((capability) => capability.name !== 'console').flatMap((capability) => capability.routes ?? [])) await fastify.register(plugin, { ctx, services: undefined });
  await fastify.ready();
  await fastify.close();
  return openApiDocument(ctx.openapi, config.PUBLIC_BASE_URL, API_TAGS);
}

const started = performance.now();
await mkdir(join(CONSOLE_ROOT, 'generated'), { recursive: true });
// The console calls with its session: it sends no x-api-version, an API key's header.
await writeFile(join(CONSOLE_ROOT, 'generated', 'api.d.ts'), openApiTypes(await describeApi() as never, { omitHeaders: [API_VERSION_HEADER] }));
if (!process.argv.includes('--types-only')) {
  await buildConsoleBundle();
  const script = await readFile(join(CONSOLE_DIST, 'app.js'));
  const gzipped = gzipSync(script).length;
  console.log(`console: app.js ${(script.length / 1024).toFixed(1)} kB, ${(gzipped / 1024).toFixed(1)} kB gzipped (budget ${BUDGET_GZIP_BYTES / 1024} kB), built in ${Math.round(performance.now() - started)} ms`);
  if (gzipped > BUDGET_GZIP_BYTES) {
    console.error('console: the JavaScript is over its budget');
    process.exitCode = 1;
  }
}
