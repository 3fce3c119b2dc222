// What core's authentication asks of the capabilities that own the credentials: API keys (api-keys),
// sessions (identity), SCIM tokens (sso), platform tokens (workflows) and SMART access tokens
// (smart-clients). Each capability implements its port in its `start` (src/capability.ts); src/main.ts
// wires them into AppContext.auth. A service without one of those capabilities answers as one that knows
// no such credential (NO_CREDENTIALS).
import type { FastifyRequest } from 'fastify';
import { DomainError } from '../event-store/decider.ts';
import type { Principal, Role, Scope } from './principal.ts';

/** The API-key pipeline of this process: key cache, rate limiter, usage recorder (src/api-keys/pipeline.ts). */
export type ApiKeys = {
  /** Authenticates an `x-api-key` call for a route needing `scope`. */
  authenticate(request: FastifyRequest, rawKey: string, scope: Scope | undefined): Promise<Principal>;
  /** Makes this process forget a key at once (after a command changed it here). */
  invalidate(keyHash: string): void;
  /** Writes pending telemetry and IP rejections now (also runs every 5 s and on shutdown). */
  flush(): Promise<void>;
};

/** The live session behind a cookie secret, or null. */
export type SessionLookup = (sessionSecret: string) => Promise<{ sessionId: string; employerId: string; userId: string; role: Role } | null>;

/** SCIM bearer tokens, by which the SCIM routes know their caller. */
export type ScimTokens = {
  /** Whether `rawToken` is a current SCIM token, as far as this process knows without a database read. */
  isCurrent(rawToken: string): Promise<boolean>;
  /** The employer whose current SCIM token `rawToken` is, or null (malformed, unknown, rotated away, or SCIM disabled). */
  ownerOf(rawToken: string): Promise<{ employerId: string; tokenId: string } | null>;
};

/** The platform service token with this SHA-256 hash, revoked or not. */
export type PlatformTokenLookup = (tokenHash: string) => Promise<{ id: string; families: readonly string[]; revoked: boolean } | null>;

/** SMART Backend Services access tokens (src/smart-clients/access-tokens.ts). */
export type SmartTokens = {
  /**
   * The client behind `accessToken` (an `Authorization: Bearer` value), with the service scopes and
   * resource types its grant amounts to; 401 for a token that is unknown, expired or of a revoked client.
   */
  authenticate(request: FastifyRequest, accessToken: string): Promise<Principal>;
};

export type AuthPorts = { apiKeys: ApiKeys; sessions: SessionLookup; scimTokens: ScimTokens; platformTokens: PlatformTokenLookup; smartTokens: SmartTokens };

const noScimTokens = () => Promise.reject(new Error('SCIM token lookup needs the sso capability'));

/** The ports of a service that has none of those capabilities: no API key, session or platform token is known. */
export const NO_CREDENTIALS: AuthPorts = {
  apiKeys: {
    authenticate: () => Promise.reject(new DomainError('unauthenticated', 'INVALID_API_KEY', 'API keys are not accepted by this server.')),
    invalidate: () => {},
    flush: async () => {},
  },
  sessions: async () => null,
  scimTokens: { isCurrent: noScimTokens, ownerOf: noScimTokens },
  platformTokens: async () => null,
  smartTokens: { authenticate: () => Promise.reject(new DomainError('unauthenticated', 'INVALID_TOKEN', 'Access tokens are not accepted by this server.')) },
};
