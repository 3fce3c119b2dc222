// SMART Backend Services clients of an employer: register, list, read, replace the key set (PUT .../keys),
// revoke (DELETE). Like API keys, an EMPLOYER_ADMIN browser session only; another employer's client is 404.
import { z } from 'zod';
import { commandContextOf, type Principal } from '../../auth/principal.ts';
import { routesUsing } from '../../capability.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../../http/page.ts';
import { defineRoute } from '../../http/route.ts';
import { ID_MAX, NAME_MAX, URL_MAX } from '../../http/limits.ts';
import type { AppContext } from '../../app-context.ts';
import { getSmartClient, listSmartClients, smartClientMetadata } from '../../../projections/smart-clients/queries.ts';
import { registerSmartClient, replaceSmartClientKeys, revokeSmartClient } from '../commands.ts';
import type { KeySource } from '../events.ts';
import { assertJwksUrl, assertPublicJwks, JWKS_KEYS_MAX } from '../key-set.ts';
import { parseSmartScope, SCOPE_SYNTAX, SMART_SCOPE_MAX } from '../scopes.ts';
import type { SmartClientServices } from '../capability.ts';

const AUTH = { modes: ['session'], role: 'EMPLOYER_ADMIN' } as const;
const tags = ['SMART clients'];
const clientParams = z.object({ clientId: z.string().max(ID_MAX) });

const jwkMember = z.union([z.string().max(4096), z.boolean(), z.array(z.string().max(8192)).max(10)]);
const jwksInput = z
  .object({ keys: z.array(z.record(z.string().max(30), jwkMember)).min(1).max(JWKS_KEYS_MAX) })
  .meta({ description: `A JWK Set of 1 to ${JWKS_KEYS_MAX} public RSA or EC keys, each with a kid (assertions are signed with RS384 or ES384; RS256, ES256, RS512, ES512, PS384 too). Private members (d, p, q, ...) are refused.` });
const keySourceFields = {
  jwks: jwksInput.optional(),
  jwksUrl: z.string().max(URL_MAX).optional().meta({ description: 'An https URL of the JWK Set, fetched when an assertion arrives and kept as its Cache-Control or Expires allow (a day at most).' }),
};
const oneKeySource = (body: { jwks?: unknown; jwksUrl?: unknown }) => (body.jwks === undefined) !== (body.jwksUrl === undefined);
const ONE_KEY_SOURCE = 'give exactly one of jwks and jwksUrl';

const createBody = z
  .strictObject({
    name: z.string().trim().min(1).max(NAME_MAX),
    ...keySourceFields,
    scopes: z
      .array(z.string().max(SMART_SCOPE_MAX).refine((scope) => parseSmartScope(scope) !== null, { error: (issue) => `${JSON.stringify(issue.input)} is not one of the ${SCOPE_SYNTAX}` }))
      .min(1)
      .max(20)
      .transform((scopes) => [...new Set(scopes)])
      .meta({ description: `The scopes the client may be granted: ${SCOPE_SYNTAX}. r and s are fhir:read, c, u and d fhir:write.` }),
  })
  .refine(oneKeySource, ONE_KEY_SOURCE);
const keysBody = z.strictObject(keySourceFields).refine(oneKeySource, ONE_KEY_SOURCE);

const listResponse = z.object({ clients: z.array(smartClientMetadata), nextCursor: z.string().nullable() }).meta({ id: 'SmartClientList' });

function sessionUserId(principal: Principal): string {
  if (principal.kind !== 'session') throw new Error('unreachable: SMART client management is session-only');
  return principal.userId;
}

/** The key source a body gives, checked: public keys only, or a URL allowed as webhook URLs are. */
async function keySourceOf(ctx: AppContext, body: { jwks?: KeySource['jwks']; jwksUrl?: string }): Promise<KeySource> {
  if (body.jwks) return { jwks: await assertPublicJwks(body.jwks), jwksUrl: null };
  const options = { allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, dnsTimeoutMs: ctx.config.WEBHOOK_DNS_TIMEOUT_MS, logger: ctx.logger };
  return { jwks: null, jwksUrl: await assertJwksUrl(body.jwksUrl!, options) };
}

export const smartClientRoutes = routesUsing<SmartClientServices>(async (fastify, { ctx, services }) => {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/smart-clients',
    summary: 'Register a SMART Backend Services client',
    description: 'The client then obtains access tokens at the token endpoint of /api/fhir/.well-known/smart-configuration with a JWT signed by one of its keys (iss and sub: its clientId).',
    tags,
    auth: AUTH,
    body: createBody,
    idempotent: true,
    responses: { 201: { description: 'The client', schema: smartClientMetadata } },
    handler: async ({ body, principal, request, reply }) => {
      const clientId = await registerSmartClient(ctx, commandContextOf(principal, request.id), {
        name: body.name,
        ...(await keySourceOf(ctx, body)),
        scopes: body.scopes,
        registeredBy: sessionUserId(principal),
        now: services.clock(),
      });
      reply.status(201);
      return getSmartClient(ctx.db.slonik, principal.employerId, clientId);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/smart-clients',
    summary: 'List the SMART clients of the employer',
    tags,
    auth: AUTH,
    querystring: pageQuery(LIST_PAGE),
    responses: { 200: { description: 'One page, newest first, revoked ones included; pass nextCursor as cursor for the next (null on the last)', schema: listResponse } },
    handler: async ({ query, principal }) => {
      const { clients, next } = await listSmartClients(ctx.db.slonik, principal.employerId, { limit: query.limit, after: decodeCursor(query.cursor) });
      return { clients, nextCursor: encodeCursor(next) };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/smart-clients/:clientId',
    summary: 'One SMART client',
    tags,
    auth: AUTH,
    params: clientParams,
    responses: { 200: { description: 'The client', schema: smartClientMetadata }, 404: { description: 'No such client in this employer' } },
    handler: async ({ params, principal }) => getSmartClient(ctx.db.slonik, principal.employerId, params.clientId),
  });

  defineRoute(fastify, ctx, {
    method: 'PUT',
    url: '/api/employer/smart-clients/:clientId/keys',
    summary: "Replace a SMART client's key set",
    description: 'Assertions signed with a key no longer in the set are refused from then on; access tokens already issued stay valid until they expire (at most 5 minutes). A revoked client cannot be changed (409 SMART_CLIENT_REVOKED).',
    tags,
    auth: AUTH,
    params: clientParams,
    body: keysBody,
    responses: { 200: { description: 'The client after the change', schema: smartClientMetadata }, 404: { description: 'No such client' }, 409: { description: 'The client is revoked' } },
    handler: async ({ params, body, principal, request }) => {
      await replaceSmartClientKeys(ctx, commandContextOf(principal, request.id), { clientId: params.clientId, ...(await keySourceOf(ctx, body)), now: services.clock() });
      return getSmartClient(ctx.db.slonik, principal.employerId, params.clientId);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'DELETE',
    url: '/api/employer/smart-clients/:clientId',
    summary: 'Revoke a SMART client and every access token issued to it',
    description: 'Final; its tokens are refused by every server process once this answers. Idempotent: revoking a revoked client answers 200 with the client as it is.',
    tags,
    auth: AUTH,
    params: clientParams,
    responses: { 200: { description: 'The revoked client', schema: smartClientMetadata }, 404: { description: 'No such client' } },
    handler: async ({ params, principal, request }) => {
      await revokeSmartClient(ctx, commandContextOf(principal, request.id), { clientId: params.clientId, now: services.clock() });
      return getSmartClient(ctx.db.slonik, principal.employerId, params.clientId);
    },
  });
});
