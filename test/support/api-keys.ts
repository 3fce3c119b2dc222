// API keys for tests of any capability: created through the real key-management route, plus a tiny
// capability whose routes sit behind the full API-key pipeline (tests and bench/auth.ts use it).
import { z } from 'zod';
import type { Scope } from '../../src/auth/principal.ts';
import type { Capability } from '../../src/capability.ts';
import { defineRoute } from '../../src/http/route.ts';
import { apiVersionOf } from '../../src/http/versioning.ts';
import type { TestService } from './service.ts';

export type ApiKeyOptions = {
  scopes: Scope[];
  name?: string;
  allowedIpCidrs?: string[];
  expiresAt?: string;
  rateLimitPerMinute?: number;
};

/** Creates a key as the tenant's admin through POST /api/employer/api-keys; returns its raw value, id and the response body. */
export async function createApiKey(service: Pick<TestService, 'url' | 'sessionHeaders'>, tenant: { cookie: string }, options: ApiKeyOptions) {
  const response = await fetch(`${service.url}/api/employer/api-keys`, {
    method: 'POST',
    headers: { ...service.sessionHeaders(tenant.cookie), 'content-type': 'application/json' },
    body: JSON.stringify({ name: options.name ?? 'test key', ...options }),
  });
  const body = (await response.json()) as Record<string, unknown>;
  if (response.status !== 201) throw new Error(`creating an API key failed: ${response.status} ${JSON.stringify(body)}`);
  return { rawKey: String(body.rawKey), id: String(body.id), body };
}

/** Headers of an API-key call in the current API version. */
export function keyHeaders(rawKey: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'x-api-key': rawKey, 'x-api-version': '2026-02-01', ...extra };
}

export const PROBE_SCOPE: Scope = 'webhook:manage';

/**
 * Routes for exercising the pipeline: GET /probe/scoped (x-api-key or session, scope webhook:manage)
 * answers who called and in which version; GET /probe/open needs nothing.
 */
export const probeCapability: Capability = {
  name: 'probe',
  routes: [
    async (fastify, { ctx }) => {
      defineRoute(fastify, ctx, {
        method: 'GET',
        url: '/probe/scoped',
        summary: 'Test probe behind the API-key pipeline',
        tags: ['Test'],
        auth: { modes: ['apiKey', 'session'], scope: PROBE_SCOPE },
        responses: { 200: { description: 'Who called', schema: z.object({}).passthrough() } },
        handler: async ({ principal, request }) => ({ principal, apiVersion: apiVersionOf(request) }),
      });
      defineRoute(fastify, ctx, {
        method: 'GET',
        url: '/probe/open',
        summary: 'Test probe without authentication',
        tags: ['Test'],
        auth: { public: true },
        responses: { 200: { description: 'ok' } },
        handler: async () => ({ ok: true }),
      });
    },
  ],
};
