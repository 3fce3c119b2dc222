// The API keys of an employer: create one, list them. Key management takes a browser session of an
// EMPLOYER_ADMIN only (an x-api-key caller gets 403 SESSION_REQUIRED from src/auth/authenticate.ts,
// another role 403 FORBIDDEN_ROLE).
import { z } from 'zod';
import { commandContextOf, SCOPES, type Principal } from '../../auth/principal.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import { instantSchema } from '../../http/instant.ts';
import { CIDR_LIST_MAX, CIDR_MAX, NAME_MAX } from '../../http/limits.ts';
import { normalizeCidr } from '../cidr.ts';
import { createApiKey } from '../commands.ts';
import { API_KEY_CHECK_ORDER } from '../pipeline.ts';
import { apiKeyMetadata, getApiKey, listApiKeys } from '../../../projections/api-keys/queries.ts';
import type { Clock } from '../rate-limiter.ts';

export const KEY_MANAGEMENT_AUTH = { modes: ['session'], role: 'EMPLOYER_ADMIN' } as const;
export const API_KEYS_TAGS = ['API keys'];

const cidrEntry = z.string().max(CIDR_MAX).transform((value, context) => {
  try {
    return normalizeCidr(value);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

/**
 * The fields of a key's settings, as creation (optional but scopes) and PATCH (each optional, null
 * clearing expiresAt and rateLimitPerMinute) take them; `rateLimitCeiling` is API_KEY_RATE_LIMIT_MAX_PER_MIN.
 */
export const keySettingFields = (rateLimitCeiling: number) => ({
  scopes: z
    .array(z.enum(SCOPES, { error: (issue) => `unknown scope ${JSON.stringify(issue.input)}; the scopes are ${SCOPES.join(', ')}` }))
    .min(1)
    .max(SCOPES.length)
    .transform((scopes) => [...new Set(scopes)]),
  allowedIpCidrs: z
    .array(cidrEntry)
    .max(CIDR_LIST_MAX)
    .meta({ description: 'IPv4/IPv6 CIDRs; a bare address means /32 or /128. Stored normalised. Empty or absent: any address.' })
    .transform((cidrs) => [...new Set(cidrs)]),
  expiresAt: instantSchema.meta({ description: 'ISO 8601, in the future. The key is expired from this instant on.' }),
  rateLimitPerMinute: z
    .number()
    .int()
    .min(1)
    .max(rateLimitCeiling, { error: `must be at most ${rateLimitCeiling}, the ceiling the operator set (API_KEY_RATE_LIMIT_MAX_PER_MIN)` })
    .meta({
      description: `Overrides the service default of API_KEY_RATE_LIMIT_PER_MIN. At most ${rateLimitCeiling}, the operator's ceiling (API_KEY_RATE_LIMIT_MAX_PER_MIN): ` +
        'a larger value is 400 VALIDATION_ERROR naming it, and a key given more before the ceiling was lowered gets the ceiling.',
    }),
});

/** The body of a key's creation. */
const createBody = (rateLimitCeiling: number) => {
  const fields = keySettingFields(rateLimitCeiling);
  return z.strictObject({
    name: z.string().trim().min(1).max(NAME_MAX),
    scopes: fields.scopes,
    allowedIpCidrs: fields.allowedIpCidrs.optional(),
    expiresAt: fields.expiresAt.optional(),
    rateLimitPerMinute: fields.rateLimitPerMinute.optional(),
  });
};

export const createdKey = apiKeyMetadata.extend({
  rawKey: z.string().meta({ description: 'mt_live_ followed by 64 lowercase hex characters. Shown once; only its SHA-256 is stored.' }),
}).meta({ id: 'CreatedApiKey' });

const listResponse = z
  .object({ keys: z.array(apiKeyMetadata), availableScopes: z.array(z.enum(SCOPES)), nextCursor: z.string().nullable() })
  .meta({ id: 'ApiKeyList' });

export function sessionUserId(principal: Principal): string {
  if (principal.kind !== 'session') throw new Error('unreachable: key management is session-only');
  return principal.userId;
}

export function apiKeyCollectionRoutes(clock: Clock): RoutePlugin {
  return async (fastify, { ctx }) => {
    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/api-keys',
      summary: 'Create an API key',
      description: `Returns the raw key once. Calls made with the key are checked in this order:\n\n${API_KEY_CHECK_ORDER}`,
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      body: createBody(ctx.config.API_KEY_RATE_LIMIT_MAX_PER_MIN),
      idempotent: true,
      responses: { 201: { description: 'The key, with its raw value', schema: createdKey } },
      handler: async ({ body, principal, request, reply }) => {
        const { keyId, rawKey } = await createApiKey(ctx, commandContextOf(principal, request.id), {
          name: body.name,
          scopes: body.scopes,
          allowedIpCidrs: body.allowedIpCidrs ?? [],
          expiresAt: body.expiresAt ? new Date(body.expiresAt).toISOString() : null,
          rateLimitPerMinute: body.rateLimitPerMinute ?? null,
          createdBy: sessionUserId(principal),
          now: clock(),
        });
        const metadata = await getApiKey(ctx.db.slonik, principal.employerId, keyId, clock());
        reply.status(201).header('cache-control', 'no-store');
        return { ...metadata, rawKey };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/api-keys',
      summary: 'List the API keys of the employer and the scopes a key may hold',
      tags: API_KEYS_TAGS,
      auth: KEY_MANAGEMENT_AUTH,
      querystring: pageQuery(LIST_PAGE),
      responses: {
        200: { description: 'One page of keys, newest first, revoked ones included; pass nextCursor as cursor for the next (null on the last page)', schema: listResponse },
      },
      handler: async ({ query, principal }) => {
        const { keys, next } = await listApiKeys(ctx.db.slonik, principal.employerId, clock(), { limit: query.limit, after: decodeCursor(query.cursor) });
        return { keys, availableScopes: [...SCOPES], nextCursor: encodeCursor(next) };
      },
    });
  };
}
