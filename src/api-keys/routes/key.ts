// One API key of an employer: read, rename, suspend or resume, revoke. Keys of another employer answer
// 404, like keys that do not exist.
import { z } from 'zod';
import { commandContextOf } from '../../auth/principal.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { defineRoute } from '../../http/route.ts';
import { ID_MAX, NAME_MAX } from '../../http/limits.ts';
import { changeApiKey, revokeApiKey } from '../commands.ts';
import { apiKeyMetadata, getApiKey } from '../../../projections/api-keys/queries.ts';
import type { Clock } from '../rate-limiter.ts';
import { API_KEYS_TAGS, KEY_MANAGEMENT_AUTH } from './keys.ts';

const keyParams = z.object({ keyId: z.string().max(ID_MAX) });

const patchBody = z
  .strictObject({
    name: z.string().trim().min(1).max(NAME_MAX).optional(),
    status: z.enum(['active', 'inactive']).optional().meta({ description: 'inactive suspends the key (API_KEY_INACTIVE); active resumes it.' }),
  })
  .refine((body) => body.name !== undefined || body.status !== undefined, 'give name or status');

export function apiKeyRoutes(clock: Clock): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/api-keys/:keyId',
      summary: 'Metadata of one API key',
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      params: keyParams,
      responses: { 200: { description: 'The key', schema: apiKeyMetadata }, 404: { description: 'No such key in this employer' } },
      handler: async ({ params, principal }) => getApiKey(ctx.db.slonik, principal.employerId, params.keyId, clock()),
    });

    defineRoute(fastify, ctx, {
      method: 'PATCH',
      url: '/api/employer/api-keys/:keyId',
      summary: 'Rename, suspend (status inactive) or resume (status active) an API key',
      description: 'A revoked key cannot be changed (409 API_KEY_REVOKED). Suspension takes effect at once in every server process.',
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      params: keyParams,
      body: patchBody,
      responses: { 200: { description: 'The key after the change', schema: apiKeyMetadata }, 404: { description: 'No such key' }, 409: { description: 'The key is revoked' } },
      handler: async ({ params, body, principal, request }) => {
        await changeApiKey(ctx, commandContextOf(principal, request.id), { keyId: params.keyId, ...body });
        return getApiKey(ctx.db.slonik, principal.employerId, params.keyId, clock());
      },
    });

    defineRoute(fastify, ctx, {
      method: 'DELETE',
      url: '/api/employer/api-keys/:keyId',
      summary: 'Revoke an API key',
      description: 'Revocation is final and takes effect at once in every server process. Idempotent: revoking a revoked key changes nothing and answers 200 with the key as it is (its original revokedAt).',
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      params: keyParams,
      responses: { 200: { description: 'The revoked key', schema: apiKeyMetadata }, 404: { description: 'No such key' } },
      handler: async ({ params, principal, request }) => {
        await revokeApiKey(ctx, commandContextOf(principal, request.id), { keyId: params.keyId, reason: 'admin', now: clock() });
        return getApiKey(ctx.db.slonik, principal.employerId, params.keyId, clock());
      },
    });
  };
}
