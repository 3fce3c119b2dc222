// SMART Backend Services in one process: the token endpoint's checks and issuance, and the access-token
// port of core's authentication (src/auth/ports.ts SmartTokens).
//
// An assertion (RFC 7523, SMART "Backend Services") is accepted when its client is registered and
// active, it is signed with one of the client's current keys (by kid; ASSERTION_ALGORITHMS), iss = sub
// = the client id, aud = the token endpoint URL, it expires at most 5 minutes ahead, and its jti was not
// accepted before within its lifetime (smart_assertion_jtis: the primary key decides across processes;
// a client's expired jtis are pruned as it asks again). A failed authentication is `invalid_client`
// (401); a well-signed assertion with a refused lifetime or a replayed jti is `invalid_grant` (400).
//
// Access tokens are opaque (`smt_` + 256 random bits), stored only as SHA-256 with their grant, for
// ACCESS_TOKEN_SECONDS. Each process caches grants by hash; revoking a client notifies the hash of each
// of its tokens (projections/smart-clients), so every process refuses them once the revocation commits.
// Throttles: failed authentications per address (spent first, given back on success; IPv6 by /64),
// issued tokens per client.
import { errors as joseErrors, createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import type { FastifyRequest } from 'fastify';
import { sql } from 'slonik';
import type { StartContext } from '../app-context.ts';
import type { SmartTokens } from '../auth/ports.ts';
import type { Principal } from '../auth/principal.ts';
import { createNotifiedCache, type NotifiedCache } from '../db/notified-cache.ts';
import { randomToken, sha256Hex } from '../crypto/tokens.ts';
import { DomainError } from '../event-store/decider.ts';
import { clientAddressKey, createTokenBuckets, type RateVerdict } from '../http/token-buckets.ts';
import { activeSmartClient, findAccessToken } from '../../projections/smart-clients/queries.ts';
import { SMART_ACCESS_TOKEN_CHANGED_CHANNEL } from '../../projections/smart-clients/projection.ts';
import { ASSERTION_ALGORITHMS, type KeySetFetcher } from './key-set.ts';
import { grantedScopes, parseSmartScope, serviceScopesOf, type SmartScope } from './scopes.ts';

export const ACCESS_TOKEN_SECONDS = 300;
export const ASSERTION_LIFETIME_MAX_SECONDS = 300;
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Leeway for clocks that disagree, on exp and iat. */
const CLOCK_TOLERANCE_SECONDS = 5;
const TOKEN_PREFIX = 'smt_';

export type TokenRequest = { grant_type: string; scope: string; client_assertion_type: string; client_assertion: string };
export type TokenResponse = { access_token: string; token_type: 'bearer'; expires_in: number; scope: string };

export type SmartTokenService = SmartTokens & {
  /** The token endpoint: checks the request and its assertion, answers an access token or an OAuth error (DomainError whose code is the OAuth error). */
  issue(request: FastifyRequest, body: TokenRequest, tokenEndpoint: string): Promise<TokenResponse>;
  stop(): void;
};

const oauthError = (kind: 'invalid' | 'unauthenticated', error: string, description: string) => new DomainError(kind, error, description);
const invalidClient = (description: string) => oauthError('unauthenticated', 'invalid_client', description);
const invalidGrant = (description: string) => oauthError('invalid', 'invalid_grant', description);
const throttled = (verdict: RateVerdict & { allowed: false }, what: string) =>
  new DomainError('too_many', 'invalid_request', `${what}; retry in ${verdict.retryAfterSeconds} s.`, { retryAfterSeconds: verdict.retryAfterSeconds });

type Grant = { employerId: string; clientId: string; expiresAt: number; principal: Principal };

export async function startSmartTokenService(ctx: StartContext, keySets: KeySetFetcher, clock: () => number): Promise<SmartTokenService> {
  const pool = ctx.db.slonik;
  const failures = createTokenBuckets({ perSecond: ctx.config.SMART_AUTH_FAILURES_PER_ADDRESS_PER_MIN / 60, burst: ctx.config.SMART_AUTH_FAILURES_PER_ADDRESS_PER_MIN }, clock);
  const issuance = createTokenBuckets({ perSecond: ctx.config.SMART_TOKEN_RATE_LIMIT_PER_MIN / 60, burst: ctx.config.SMART_TOKEN_RATE_LIMIT_PER_MIN }, clock);
  const grants: NotifiedCache<Grant | null> = await createNotifiedCache({
    notifications: ctx.notifications,
    channel: SMART_ACCESS_TOKEN_CHANGED_CHANNEL,
    ttlMs: ACCESS_TOKEN_SECONDS * 1000,
    maxEntries: 50_000,
    clock,
    load: async (tokenHash) => {
      const found = await findAccessToken(pool, tokenHash);
      if (!found) return null;
      const { scopes, resourceTypes } = serviceScopesOf(found.scopes.map(parseSmartScope).filter((scope) => scope !== null));
      return { ...found, principal: { kind: 'smartClient', employerId: found.employerId, clientId: found.clientId, scopes, resourceTypes } };
    },
  });

  const spendFailure = (request: FastifyRequest, what: string) => {
    const verdict = failures.take(clientAddressKey(request.ip));
    if (!verdict.allowed) throw throttled(verdict, what);
  };

  const verifyAssertion = async (assertion: string, tokenEndpoint: string) => {
    let claims: JWTPayload;
    let kid: unknown;
    try {
      claims = decodeJwt(assertion);
      kid = decodeProtectedHeader(assertion).kid;
    } catch {
      throw invalidClient('client_assertion is not a JWT.');
    }
    const clientId = claims.iss;
    if (typeof clientId !== 'string' || clientId.length > 100 || claims.sub !== clientId) throw invalidClient('The assertion\'s iss and sub must both be the client id.');
    if (typeof kid !== 'string') throw invalidClient('The assertion\'s header must name its key (kid).');
    const client = await activeSmartClient(pool, clientId);
    if (!client) throw invalidClient('No active client has this id.');
    const verify = async (refresh: boolean) => {
      const keys = client.jwks ?? (await keySets.get(client.jwksUrl!, { refresh }));
      return jwtVerify(assertion, createLocalJWKSet(keys as never), {
        issuer: clientId,
        subject: clientId,
        audience: tokenEndpoint,
        algorithms: [...ASSERTION_ALGORITHMS],
        requiredClaims: ['exp', 'jti'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: new Date(clock()),
      });
    };
    let payload: JWTPayload;
    try {
      // A kid the fetched set lacks: the client may have rotated its keys since the set was kept.
      payload = (await verify(false).catch((error: unknown) => (error instanceof joseErrors.JWKSNoMatchingKey && client.jwksUrl ? verify(true) : Promise.reject(error)))).payload;
    } catch (error) {
      // The key set could not be fetched: the client cannot be authenticated.
      if (error instanceof DomainError) throw invalidClient(error.message);
      if (error instanceof joseErrors.JWTExpired) throw invalidGrant('The assertion has expired.');
      if (error instanceof joseErrors.JWKSNoMatchingKey) throw invalidClient(`No current key of the client has the kid ${kid}.`);
      if (error instanceof joseErrors.JWTClaimValidationFailed) throw invalidClient(`The assertion's ${error.claim} claim is not acceptable${error.claim === 'aud' ? `: it must be ${tokenEndpoint}` : ''}.`);
      throw invalidClient('The assertion\'s signature does not verify with the client\'s keys.');
    }
    const now = Math.floor(clock() / 1000);
    if (payload.exp! > now + ASSERTION_LIFETIME_MAX_SECONDS + CLOCK_TOLERANCE_SECONDS) throw invalidGrant(`The assertion's exp must be at most ${ASSERTION_LIFETIME_MAX_SECONDS} seconds ahead.`);
    if (typeof payload.jti !== 'string' || payload.jti.length === 0 || payload.jti.length > 200) throw invalidGrant('The assertion needs a jti of 1 to 200 characters.');
    // Accepted once within its lifetime: a jti seen before counts again only once its first use expired.
    // The client's other expired jtis go in the same statement.
    const accepted = await pool.maybeOne(sql.unsafe`
      WITH pruned AS (DELETE FROM smart_assertion_jtis WHERE client_id = ${clientId} AND expires_at < now() AND jti <> ${payload.jti})
      INSERT INTO smart_assertion_jtis (client_id, jti, expires_at) VALUES (${clientId}, ${payload.jti}, to_timestamp(${payload.exp!}))
      ON CONFLICT (client_id, jti) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE smart_assertion_jtis.expires_at < now()
      RETURNING 1 AS accepted`);
    if (!accepted) throw invalidGrant('The assertion\'s jti has been used before.');
    return client;
  };

  return {
    async issue(request, body, tokenEndpoint) {
      if (body.grant_type !== 'client_credentials') throw oauthError('invalid', 'unsupported_grant_type', 'grant_type must be client_credentials.');
      if (body.client_assertion_type !== JWT_BEARER) throw oauthError('invalid', 'invalid_request', `client_assertion_type must be ${JWT_BEARER}.`);
      spendFailure(request, 'Too many failed authentications from this address');
      const client = await verifyAssertion(body.client_assertion, tokenEndpoint);
      const requested = body.scope.split(/\s+/).filter(Boolean);
      const parsed = requested.map(parseSmartScope);
      const unknown = requested.filter((_, index) => parsed[index] === null);
      if (requested.length === 0 || unknown.length > 0) throw oauthError('invalid', 'invalid_scope', unknown.length > 0 ? `Not system scopes over the served types: ${unknown.join(' ')}.` : 'scope is required.');
      const granted = grantedScopes(parsed as SmartScope[], client.scopes.map(parseSmartScope).filter((scope) => scope !== null));
      if (granted.length === 0) throw oauthError('invalid', 'invalid_scope', 'None of the requested scopes is registered for this client.');
      failures.refund(clientAddressKey(request.ip));
      const verdict = issuance.take(client.clientId);
      if (!verdict.allowed) throw throttled(verdict, `More than ${ctx.config.SMART_TOKEN_RATE_LIMIT_PER_MIN} access tokens a minute for this client`);
      const accessToken = `${TOKEN_PREFIX}${randomToken(32)}`;
      await pool.query(sql.unsafe`
        WITH pruned AS (DELETE FROM smart_access_tokens WHERE client_id = ${client.clientId} AND expires_at < now())
        INSERT INTO smart_access_tokens (token_hash, employer_id, client_id, scopes, expires_at)
        VALUES (${sha256Hex(accessToken)}, ${client.employerId}, ${client.clientId}, ${sql.array(granted, 'text')}, to_timestamp(${(clock() / 1000) + ACCESS_TOKEN_SECONDS}))`);
      return { access_token: accessToken, token_type: 'bearer', expires_in: ACCESS_TOKEN_SECONDS, scope: granted.join(' ') };
    },

    async authenticate(request, accessToken) {
      const grant = accessToken.startsWith(TOKEN_PREFIX) && accessToken.length <= 100 ? await grants.get(sha256Hex(accessToken)) : null;
      if (!grant || grant.expiresAt <= clock()) {
        spendFailure(request, 'Too many failed authentications from this address');
        throw new DomainError('unauthenticated', 'INVALID_TOKEN', 'The access token is not valid: unknown, expired, or its client was revoked.');
      }
      return grant.principal;
    },

    stop: () => grants.stop(),
  };
}
