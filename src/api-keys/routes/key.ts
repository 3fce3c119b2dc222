// One API key of an employer: read, change in place (name, status, settings), roll, revoke. Keys of
// another employer answer 404, like keys that do not exist.
import { z } from 'zod';
import { commandContextOf } from '../../auth/principal.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { defineRoute } from '../../http/route.ts';
import { ID_MAX, NAME_MAX } from '../../http/limits.ts';
import { changeApiKey, revokeApiKey, rollApiKey } from '../commands.ts';
import { apiKeyMetadata, getApiKey } from '../../../projections/api-keys/queries.ts';
import type { Clock } from '../rate-limiter.ts';
import { API_KEYS_TAGS, createdKey, KEY_MANAGEMENT_AUTH, keySettingFields, sessionUserId } from './keys.ts';

const keyParams = z.object({ keyId: z.string().max(ID_MAX) });

/** How long a rolled key keeps working unless the caller chooses: 24 h; 7 days at most. */
export const DEFAULT_ROLL_OVERLAP_SECONDS = 24 * 3600;
const MAX_ROLL_OVERLAP_SECONDS = 7 * 24 * 3600;

const patchBody = (rateLimitCeiling: number) => {
  const fields = keySettingFields(rateLimitCeiling);
  return z
    .strictObject({
      name: z.string().trim().min(1).max(NAME_MAX).optional(),
      status: z.enum(['active', 'inactive']).optional().meta({ description: 'inactive suspends the key (API_KEY_INACTIVE); active resumes it.' }),
      scopes: fields.scopes.optional(),
      allowedIpCidrs: fields.allowedIpCidrs.optional(),
      expiresAt: fields.expiresAt.nullable().optional().meta({ description: 'ISO 8601, in the future; null: the key no longer expires.' }),
      rateLimitPerMinute: fields.rateLimitPerMinute.nullable().optional().meta({ description: 'null: the service default again.' }),
    })
    .refine((body) => Object.values(body).some((value) => value !== undefined), 'give at least one field to change');
};

const rollBody = z
  .strictObject({
    overlapSeconds: z.number().int().min(0).max(MAX_ROLL_OVERLAP_SECONDS).meta({
      description: `How long the old key keeps working: ${DEFAULT_ROLL_OVERLAP_SECONDS} (24 h) by default, at most ${MAX_ROLL_OVERLAP_SECONDS} (7 days); 0 revokes it at once.`,
    }),
  })
  .partial()
  .optional();

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
      summary: 'Change an API key in place: name, status (suspend or resume), scopes, CIDR allowlist, expiry, rate limit',
      description: 'A revoked key cannot be changed (409 API_KEY_REVOKED). Every change takes effect in every server process within a second (the same ' +
        'notification as a revocation). Fields absent stay as they are.',
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      params: keyParams,
      body: patchBody(ctx.config.API_KEY_RATE_LIMIT_MAX_PER_MIN),
      responses: { 200: { description: 'The key after the change', schema: apiKeyMetadata }, 404: { description: 'No such key' }, 409: { description: 'The key is revoked' } },
      handler: async ({ params, body, principal, request }) => {
        const { name, status, ...settings } = body;
        const changes = Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined));
        await changeApiKey(ctx, commandContextOf(principal, request.id), {
          keyId: params.keyId,
          ...(name === undefined ? {} : { name }),
          ...(status === undefined ? {} : { status }),
          settings: changes,
          now: clock(),
        });
        return getApiKey(ctx.db.slonik, principal.employerId, params.keyId, clock());
      },
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/api-keys/:keyId/roll',
      summary: 'Roll an API key: a new key with the same name and settings; the old one keeps working for an overlap, then is revoked',
      description: 'Returns the new key with its raw value once. The old key shows rolledInto and revokesAt, and from revokesAt on is refused with ' +
        '401 API_KEY_REVOKED (checked at every call; DELETE on it ends the overlap early). The new key is recorded as created by the caller. ' +
        'A key rolled already is 409 API_KEY_ROLLED (roll its successor), an expired one 409 API_KEY_EXPIRED, a revoked one 409 API_KEY_REVOKED.',
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      params: keyParams,
      body: rollBody,
      idempotent: true,
      responses: {
        201: { description: 'The new key, with its raw value', schema: createdKey },
        404: { description: 'No such key' },
        409: { description: 'API_KEY_ROLLED, API_KEY_EXPIRED or API_KEY_REVOKED' },
      },
      handler: async ({ params, body, principal, request, reply }) => {
        const { keyId, rawKey } = await rollApiKey(ctx, commandContextOf(principal, request.id), {
          keyId: params.keyId,
          overlapMs: (body?.overlapSeconds ?? DEFAULT_ROLL_OVERLAP_SECONDS) * 1000,
          createdBy: sessionUserId(principal),
          now: clock(),
        });
        const metadata = await getApiKey(ctx.db.slonik, principal.employerId, keyId, clock());
        reply.status(201).header('cache-control', 'no-store');
        return { ...metadata, rawKey };
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
