// A SMART client's keys. Inline, a JWK Set of public RSA or EC keys, each with a kid (assertions name
// theirs) and no private member: a set that carries one is refused, so a private key pasted by mistake
// is never stored. By URL (https), the set is fetched through the SSRF-safe dispatcher of src/net/ and
// kept per process as its Cache-Control (max-age, no-store) or Expires allow, a day at most; a kid not
// in the kept set fetches it again at most once a minute (the client rotated its keys).
import { request, type Agent } from 'undici';
import { importJWK, type JWK } from 'jose';
import { DomainError } from '../event-store/decider.ts';
import { assertSafeTargetUrl, UnsafeTargetError, type SafeTargetOptions } from '../net/safe-target.ts';
import type { PublicJwks } from './events.ts';

/** The signing algorithms accepted on assertions (SMART asks servers for RS384 and ES384). */
export const ASSERTION_ALGORITHMS = ['RS384', 'ES384', 'RS256', 'ES256', 'RS512', 'ES512', 'PS384'] as const;
export const JWKS_KEYS_MAX = 10;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const FETCH_TIMEOUT_MS = 5_000;
const JWKS_BYTES_MAX = 64 * 1024;
const CACHE_MAX_MS = 24 * 60 * 60 * 1000;
/** Without caching headers a fetched set is kept this long. */
const CACHE_DEFAULT_MS = 5 * 60 * 1000;
const REFETCH_AFTER_MS = 60 * 1000;


/** Refuses a set that is not one of public RSA/EC keys with distinct kids (or cannot be imported). */
export async function assertPublicJwks(jwks: PublicJwks, where = 'jwks'): Promise<PublicJwks> {
  const refuse = (message: string) => new DomainError('invalid', 'INVALID_JWKS', `${where}: ${message}`);
  if (jwks.keys.length === 0 || jwks.keys.length > JWKS_KEYS_MAX) throw refuse(`must hold 1 to ${JWKS_KEYS_MAX} keys`);
  const kids = new Set<string>();
  for (const [index, key] of jwks.keys.entries()) {
    const privateMember = PRIVATE_MEMBERS.find((member) => member in key);
    if (privateMember) throw refuse(`key ${index} has the private member "${privateMember}": register public keys only`);
    if (key.kty !== 'RSA' && key.kty !== 'EC') throw refuse(`key ${index}: kty must be RSA or EC`);
    if (typeof key.kid !== 'string' || key.kid.length === 0 || key.kid.length > 200) throw refuse(`key ${index}: needs a kid (1 to 200 characters)`);
    if (kids.has(key.kid)) throw refuse(`key ${index}: kid ${key.kid} is repeated`);
    kids.add(key.kid);
    if (key.alg !== undefined && !(ASSERTION_ALGORITHMS as readonly unknown[]).includes(key.alg)) throw refuse(`key ${index}: alg must be one of ${ASSERTION_ALGORITHMS.join(', ')}`);
    const alg = typeof key.alg === 'string' ? key.alg : key.kty === 'RSA' ? 'RS384' : ecAlgorithmOf(key.crv);
    try {
      await importJWK(key as JWK, alg);
    } catch {
      throw refuse(`key ${index} is not a valid ${key.kty} public key`);
    }
  }
  return jwks;
}

function ecAlgorithmOf(crv: unknown): string {
  return crv === 'P-256' ? 'ES256' : crv === 'P-521' ? 'ES512' : 'ES384';
}

/** A jwksUrl must be https and reach public addresses only (as webhook URLs). */
export async function assertJwksUrl(url: string, options: SafeTargetOptions): Promise<string> {
  try {
    await assertSafeTargetUrl(url, options);
  } catch (error) {
    if (error instanceof UnsafeTargetError) throw new DomainError('invalid', 'INVALID_JWKS_URL', `jwksUrl: ${error.message.replace(/^webhook url/, 'the URL')}`);
    throw error;
  }
  return url;
}

export type KeySetFetcher = {
  /** The set at `url`, from this process's cache while its caching headers allow; `refresh` asks again (at most once a minute). */
  get(url: string, options?: { refresh?: boolean }): Promise<PublicJwks>;
};

export function createKeySetFetcher(dispatcher: Agent, clock: () => number = Date.now): KeySetFetcher {
  const cache = new Map<string, { jwks: PublicJwks; fetchedAt: number; keepUntil: number }>();
  const fetchSet = async (url: string) => {
    const unreachable = (why: string) => new DomainError('unauthenticated', 'JWKS_UNAVAILABLE', `The client's key set could not be fetched (${why}).`);
    let text: string;
    let headers: Record<string, string | string[] | undefined>;
    try {
      const response = await request(url, { method: 'GET', headers: { accept: 'application/json' }, dispatcher, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      headers = response.headers;
      text = await readLimited(response.body);
      if (response.statusCode !== 200) throw unreachable(`HTTP ${response.statusCode}`);
    } catch (error) {
      if (error instanceof DomainError) throw error;
      throw unreachable(error instanceof UnsafeTargetError ? error.message : 'no answer');
    }
    let jwks: PublicJwks;
    try {
      const parsed = JSON.parse(text) as PublicJwks;
      if (!Array.isArray(parsed?.keys)) throw new Error('no keys');
      jwks = await assertPublicJwks(parsed, 'jwksUrl');
    } catch {
      throw unreachable('not a JWK Set of public keys');
    }
    const now = clock();
    cache.delete(url);
    cache.set(url, { jwks, fetchedAt: now, keepUntil: now + keepFor(headers, now) });
    if (cache.size > 1000) cache.delete(cache.keys().next().value!);
    return jwks;
  };
  return {
    async get(url, { refresh = false } = {}) {
      const entry = cache.get(url);
      const now = clock();
      if (entry && now < entry.keepUntil && !(refresh && now - entry.fetchedAt >= REFETCH_AFTER_MS)) return entry.jwks;
      return fetchSet(url);
    },
  };
}

/** How long a response may be kept: Cache-Control no-store/no-cache 0, max-age, else Expires, else the default; a day at most. */
export function keepFor(headers: Record<string, string | string[] | undefined>, now: number): number {
  const cacheControl = String(headers['cache-control'] ?? '').toLowerCase();
  if (/\b(no-store|no-cache)\b/.test(cacheControl)) return 0;
  const maxAge = /\bmax-age=(\d+)/.exec(cacheControl)?.[1];
  const expires = headers.expires === undefined ? NaN : Date.parse(String(headers.expires));
  const ms = maxAge !== undefined ? Number(maxAge) * 1000 : Number.isFinite(expires) ? expires - now : CACHE_DEFAULT_MS;
  return Math.max(0, Math.min(ms, CACHE_MAX_MS));
}

async function readLimited(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > JWKS_BYTES_MAX) throw new DomainError('unauthenticated', 'JWKS_UNAVAILABLE', `The client's key set is over ${JWKS_BYTES_MAX} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
