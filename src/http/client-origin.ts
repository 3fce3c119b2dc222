// The address and user agent of the HTTP request a command runs in, for its events' metadata (the audit
// trail shows them). Held in an AsyncLocalStorage for the request's whole lifecycle, so every command a
// request causes (routes, SCIM, SAML callbacks, sign-in) gets them without passing them along, and work
// outside a request (jobs, the CLI) has none.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyRequest } from 'fastify';

export type ClientOrigin = { ipAddress: string; userAgent?: string };

/** Longest user agent kept: enough for every real browser's, bounded for a client that sends more. */
export const MAX_USER_AGENT_LENGTH = 512;

const origins = new AsyncLocalStorage<ClientOrigin>();

/** Runs the rest of the request (`next`) with its origin: `request.ip` is the client's address after TRUST_PROXY. */
export function runWithClientOrigin(request: FastifyRequest, next: () => void): void {
  const userAgent = request.headers['user-agent']?.slice(0, MAX_USER_AGENT_LENGTH);
  origins.run(userAgent ? { ipAddress: request.ip, userAgent } : { ipAddress: request.ip }, next);
}

/** The origin of the request the caller runs in, or undefined outside one. */
export function currentClientOrigin(): ClientOrigin | undefined {
  return origins.getStore();
}
