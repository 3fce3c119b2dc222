// API versions of the API-key routes (SPEC section 9). API-key calls send `x-api-version`; a missing
// or unknown value is 400 UNSUPPORTED_API_VERSION listing what is accepted. The resolved version is
// put on the request for handlers and echoed in the `x-api-version` response header. Browser-session
// calls need no header and get the current version.
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../event-store/decider.ts';

export const API_VERSION_HEADER = 'x-api-version';
export const CURRENT_API_VERSION = '2026-02-01';
export const API_VERSIONS = [CURRENT_API_VERSION] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];
const ALIASES: Record<string, ApiVersion> = { v1: '2026-02-01' };

/** Every value the header accepts: dated versions and their aliases. */
export const SUPPORTED_API_VERSION_VALUES: readonly string[] = [...API_VERSIONS, ...Object.keys(ALIASES)];

export function resolveApiVersion(header: string | string[] | undefined): ApiVersion {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  const resolved = value ? ((API_VERSIONS as readonly string[]).includes(value) ? (value as ApiVersion) : ALIASES[value]) : undefined;
  if (resolved) return resolved;
  throw new DomainError(
    'invalid',
    'UNSUPPORTED_API_VERSION',
    value ? `API version "${value.slice(0, 40)}" is not supported.` : `The ${API_VERSION_HEADER} header is required with an API key.`,
    { supportedVersions: [...SUPPORTED_API_VERSION_VALUES] },
  );
}

/** The version a handler should answer in. */
export function apiVersionOf(request: FastifyRequest): ApiVersion {
  return request.apiVersion ?? CURRENT_API_VERSION;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the API-key pipeline from x-api-version; absent for session calls. */
    apiVersion?: ApiVersion;
  }
}
