// What /api/openapi says about every operation that follows from its route's declaration alone
// (src/http/route.ts): the security scheme of each credential and the operation's `security`, the
// x-api-version header of operations that accept an API key, and the 4XX responses, written in the
// route's error shape. A route that declares its auth and error shape gets all of it.
import type { OpenAPIRegistry, ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { credentialsOf, type Credential, type RouteAuth } from '../auth/principal.ts';
import type { ErrorShape } from './errors.ts';
import { BODY_LIMIT_BYTES, formatBytes } from './limits.ts';
import { API_VERSION_HEADER, CURRENT_API_VERSION, SUPPORTED_API_VERSION_VALUES } from './versioning.ts';

type SecurityScheme =
  | { type: 'apiKey'; in: 'header' | 'cookie'; name: string; description: string }
  | { type: 'http'; scheme: 'bearer'; description: string };

/**
 * Each credential as a security scheme (named as the credential), what a 401 on it means, and
 * whether its callers are rate limited (429). A new credential is one line here.
 */
const CREDENTIALS: Record<Credential, { scheme: SecurityScheme; missing: string; rateLimited: boolean }> = {
  apiKey: {
    scheme: { type: 'apiKey', in: 'header', name: 'x-api-key', description: `API key (mt_live_...). Calls also send ${API_VERSION_HEADER}, declared on every operation that takes a key. Rate limited per key: past it, 429 RATE_LIMITED with Retry-After. Each operation names the scope it needs (x-required-scope): those of the spec, and audit:read, an addition, for the audit log and its export.` },
    missing: 'an API key (x-api-key) that is unknown, revoked, expired or suspended (INVALID_API_KEY, API_KEY_REVOKED, API_KEY_EXPIRED, API_KEY_INACTIVE)',
    rateLimited: true,
  },
  session: {
    scheme: {
      type: 'apiKey',
      in: 'cookie',
      name: 'ei_session',
      description: 'Browser session from /api/auth/signin. Its calls are rate limited per signed-in user (or per session), SESSION_RATE_LIMIT_PER_MIN a minute (600 by default): past it, 429 RATE_LIMITED with Retry-After.',
    },
    missing: 'a browser session that is invalid, expired or ended (SESSION_EXPIRED)',
    rateLimited: true,
  },
  smartToken: {
    scheme: { type: 'http', scheme: 'bearer', description: 'SMART Backend Services access token (FHIR and Bulk Data routes), from the token endpoint that /api/fhir/.well-known/smart-configuration names. No x-api-version.' },
    missing: 'a SMART access token that is unknown, expired or of a revoked client (invalid_token, with WWW-Authenticate: Bearer)',
    rateLimited: true,
  },
  platformToken: {
    scheme: { type: 'http', scheme: 'bearer', description: 'Platform service token (internal platform API only), from `platform-tokens create`.' },
    missing: 'a platform service token that is unknown or revoked (PLATFORM_TOKEN_REQUIRED, INVALID_PLATFORM_TOKEN, PLATFORM_TOKEN_REVOKED)',
    rateLimited: false,
  },
  scimToken: {
    scheme: { type: 'http', scheme: 'bearer', description: 'The employer\'s SCIM bearer token (shown once when SCIM is enabled or the token rotated: POST /api/employer/sso). Rate limited per token and per address: past it, 429 with Retry-After.' },
    missing: 'the employer\'s SCIM bearer token, or one that is no longer valid',
    rateLimited: true,
  },
  cronSecret: {
    scheme: { type: 'http', scheme: 'bearer', description: 'CRON_SECRET, sent by the scheduler as Authorization: Bearer. While it is unset the cron routes answer 503 CRON_NOT_CONFIGURED.' },
    missing: 'the cron secret (UNAUTHORIZED)',
    rateLimited: false,
  },
};

export function registerSecuritySchemes(registry: OpenAPIRegistry): void {
  for (const [name, { scheme }] of Object.entries(CREDENTIALS)) registry.registerComponent('securitySchemes', name, scheme);
}

/** The operation's `security`: any one of the route's credentials; none for a public route. */
export function securityOf(auth: RouteAuth): Array<Record<string, string[]>> {
  return credentialsOf(auth).map((credential) => ({ [credential]: [] }));
}

/** The x-api-version header, on every operation that accepts an API key. */
export const apiVersionHeaders = z.object({
  [API_VERSION_HEADER]: z.enum(SUPPORTED_API_VERSION_VALUES as [string, ...string[]]).meta({
    description: `The API version the call is written against (${CURRENT_API_VERSION}; v1 is its alias): required with an API key, else 400 UNSUPPORTED_API_VERSION. A browser session may omit it and gets the current version.`,
    example: CURRENT_API_VERSION,
  }),
});

export function acceptsApiKey(auth: RouteAuth): boolean {
  return credentialsOf(auth).includes('apiKey');
}

/** What an operation's 4XX responses are derived from. */
export type ErrorSources = { auth: RouteAuth; hasPathParams: boolean; hasInput: boolean; hasBody: boolean; bodyLimit: number | undefined; bodyValues: number };

/**
 * The 4XX answers any route can give, from what it declares: 400 when it takes input (or an API key,
 * whose x-api-version is checked), 401 when it needs a credential, 403 for employer and platform
 * routes (scopes, roles, families), 404 when its path names something, 413 when it takes a body, 429
 * when its credential is rate limited. Statuses a route gives for its own reasons (409, 412, 422, ...)
 * it declares in `responses`.
 */
export function derivedErrorResponses(sources: ErrorSources): Record<number, string> {
  const { auth } = sources;
  const credentials = credentialsOf(auth);
  const responses: Record<number, string> = {};
  if (sources.hasInput || credentials.includes('apiKey')) {
    responses[400] = [
      ...(sources.hasInput ? ['The request is invalid: a parameter or the body (VALIDATION_ERROR, naming each failing field)'] : []),
      ...(credentials.includes('apiKey') ? [`with an API key, ${API_VERSION_HEADER} is missing or not supported (UNSUPPORTED_API_VERSION)`] : []),
    ].join('; or ');
  }
  if (credentials.length > 0) responses[401] = `Not authenticated: it needs ${credentials.map((credential) => CREDENTIALS[credential].missing).join(', or ')}`;
  if ('modes' in auth) {
    const refusals = [
      ...(credentials.includes('apiKey') ? ['the API key lacks the scope or is used from an address outside its allowlist (INSUFFICIENT_SCOPE, API_KEY_IP_NOT_ALLOWED)'] : ['an API key was sent to a route that takes only a browser session (SESSION_REQUIRED)']),
      ...(credentials.includes('session') ? ['the session\'s role may not call it (FORBIDDEN_ROLE, INSUFFICIENT_SCOPE), or a write did not come from this service\'s own origin (CSRF_REJECTED)'] : []),
    ];
    responses[403] = `Forbidden: ${refusals.join('; or ')}`;
  }
  if ('platformFamily' in auth) responses[403] = 'Forbidden: the platform service token does not hold the route\'s family (PLATFORM_FAMILY_NOT_ALLOWED)';
  if (sources.hasPathParams) responses[404] = 'Not found: nothing the caller may see has the ids in the path';
  if (sources.hasBody) {
    responses[413] = `PAYLOAD_TOO_LARGE: the body is over ${formatBytes(sources.bodyLimit ?? BODY_LIMIT_BYTES)} (limitBytes in the body), or holds more than ${sources.bodyValues} JSON values (limitValues)`;
  }
  if (credentials.some((credential) => CREDENTIALS[credential].rateLimited)) responses[429] = 'Too many requests: retry after the seconds in Retry-After (RATE_LIMITED)';
  return responses;
}

/** An error response of the route: its description, with the body of the route's error shape. */
export function errorResponse(description: string, shape: ErrorShape): ResponseConfig {
  return { description, content: { [shape.documented.contentType]: { schema: shape.documented.schema } } };
}
