// SMART Backend Services discovery and the token endpoint. GET /api/fhir/.well-known/smart-configuration
// (anonymous: clients read it before they hold anything) names the token endpoint, POST
// /api/oauth/token, which takes the client-credentials grant with a signed JWT assertion
// (form-encoded, RFC 6749 4.4 and RFC 7523) and answers an access token or an OAuth error body
// ({ error, error_description }: invalid_request, invalid_client 401, invalid_grant, invalid_scope,
// unsupported_grant_type). Not under /api/fhir: its answers are OAuth's, not FHIR resources.
import { z } from 'zod';
import { routesUsing } from '../../capability.ts';
import { errorShape } from '../../http/errors.ts';
import { defineRoute } from '../../http/route.ts';
import { fhirErrorShape } from '../../patients/fhir/outcome.ts';
import { FHIR_PATH } from '../../patients/fhir/interaction.ts';
import { ACCESS_TOKEN_SECONDS, JWT_BEARER } from '../access-tokens.ts';
import type { SmartClientServices } from '../capability.ts';
import { ASSERTION_ALGORITHMS } from '../key-set.ts';
import { SUPPORTED_SCOPES } from '../scopes.ts';

export const TOKEN_PATH = '/api/oauth/token';
const OAUTH_ERRORS = new Set(['invalid_request', 'invalid_client', 'invalid_grant', 'invalid_scope', 'unsupported_grant_type', 'unauthorized_client']);

/** RFC 6749 5.2: the error code (invalid_request for anything not an OAuth refusal, such as a malformed body). */
const oauthErrorBody = z.object({ error: z.string(), error_description: z.string() }).meta({ id: 'OAuthError', description: 'RFC 6749 5.2 error response.' });
const oauthErrorShape = errorShape({ schema: oauthErrorBody, contentType: 'application/json' }, (error) => ({
  contentType: 'application/json',
  body: { error: OAUTH_ERRORS.has(error.code) ? error.code : error.status >= 500 ? 'server_error' : 'invalid_request', error_description: error.message },
}));

const tokenBody = z.object({
  grant_type: z.string().max(100),
  scope: z.string().max(2000).meta({ description: 'Space-separated SMART system scopes, e.g. system/*.rs or system/Patient.rs system/Observation.rs.' }),
  client_assertion_type: z.string().max(200).meta({ description: JWT_BEARER }),
  client_assertion: z.string().max(16_384).meta({ description: `A JWT signed with a key of the client (kid in its header; ${ASSERTION_ALGORITHMS.join(', ')}): iss = sub = clientId, aud = the token endpoint URL, exp at most 5 minutes ahead, a jti never used before.` }),
});
const tokenResponse = z.object({
  access_token: z.string(),
  token_type: z.literal('bearer'),
  expires_in: z.number().int(),
  scope: z.string().meta({ description: 'The scopes granted: those asked for that the registration allows (their intersection), in the v2 form.' }),
});

export const oauthRoutes = routesUsing<SmartClientServices>(async (fastify, { ctx, services }) => {
  const tokenEndpoint = `${ctx.config.PUBLIC_BASE_URL}${TOKEN_PATH}`;

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: `${FHIR_PATH}/.well-known/smart-configuration`,
    summary: 'SMART configuration: the token endpoint and what it supports (SMART Backend Services)',
    tags: ['FHIR'],
    auth: { public: true },
    errorShape: fhirErrorShape,
    responses: { 200: { description: 'The SMART configuration', schema: z.record(z.string(), z.unknown()) } },
    handler: async () => ({
      token_endpoint: tokenEndpoint,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['private_key_jwt'],
      token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
      scopes_supported: SUPPORTED_SCOPES,
      capabilities: ['client-confidential-asymmetric', 'permission-v1', 'permission-v2'],
    }),
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: TOKEN_PATH,
    summary: 'SMART Backend Services token endpoint (client credentials with a signed JWT assertion)',
    description:
      `Form-encoded (application/x-www-form-urlencoded). Answers an opaque access token valid ${ACCESS_TOKEN_SECONDS} s, used as Authorization: Bearer on every FHIR and Bulk Data route. ` +
      'A failed authentication (unknown or revoked client, bad signature, unknown kid, wrong iss, sub or aud) is 401 invalid_client; an expired assertion, one whose exp is over 5 minutes ahead, ' +
      'or a jti used before is 400 invalid_grant; scopes not registered are 400 invalid_scope. Rate limits: SMART_TOKEN_RATE_LIMIT_PER_MIN tokens a minute per client, ' +
      'SMART_AUTH_FAILURES_PER_ADDRESS_PER_MIN failed authentications a minute per address (429 with Retry-After).',
    tags: ['SMART clients'],
    auth: { public: true },
    errorShape: oauthErrorShape,
    body: tokenBody,
    responses: {
      200: { description: 'The access token', schema: tokenResponse },
      400: { description: 'OAuth error (invalid_request, invalid_grant, invalid_scope, unsupported_grant_type)' },
      401: { description: 'OAuth error invalid_client' },
    },
    handler: async ({ body, request, reply }) => {
      const token = await services.tokens.issue(request, body, tokenEndpoint);
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      return token;
    },
  });
});
