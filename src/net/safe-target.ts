// URLs a tenant gives the service to call (webhook targets, SAML IdP metadata) must be public HTTPS
// endpoints (SPEC 2.2 "publicly reachable"): a tenant must not be able to make the service call its
// own loopback, the cloud metadata endpoint or the private network. Two places enforce it:
// - assertSafeTargetUrl, when such a URL is given (a clear 400 early);
// - createSafeDispatcher, on every connection: it resolves the host itself, checks every address
//   and connects to the checked one, so a DNS answer that changes after the check (rebinding)
//   never reaches a private address.
// WEBHOOK_ALLOW_PRIVATE_NETWORKS (allowPrivateNetworks) lifts the address check for development and
// tests; nothing lifts the https rule.
// Every refusal that depends on what a name resolves to says the same TARGET_NOT_ALLOWED: a tenant
// must not learn through us whether an internal name exists or which private address it has. The
// reason (the address and its class, or the resolver's error) goes to the debug log only.
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Logger } from 'pino';
import { Agent, buildConnector } from 'undici';

/** The one answer for a host that resolves to a non-public address, does not resolve, or not in time. */
export const TARGET_NOT_ALLOWED = 'target not allowed: the host must resolve, in time, to public addresses only';

export class UnsafeTargetError extends Error {
  override name = 'UnsafeTargetError';

  /** Why, for the server's debug log only; the message is what the caller is told. */
  readonly reason: string;

  constructor(message: string, reason: string = message) {
    super(message);
    this.reason = reason;
  }
}

export type SafeTargetOptions = {
  /** Development and tests only: skip the address check (https stays required). */
  allowPrivateNetworks: boolean;
  /** How long a host name may take to resolve (WEBHOOK_DNS_TIMEOUT_MS); default DEFAULT_DNS_TIMEOUT_MS. */
  dnsTimeoutMs?: number;
  /** Resolves a host name to all its addresses; the system resolver (getaddrinfo) unless a test injects one. */
  resolveHost?: HostResolver;
  /** Where refusals' reasons go, at debug level (host and address only: the URL's path may carry anything). */
  logger?: Pick<Logger, 'debug'>;
};

export type HostResolver = (hostname: string, family: number) => Promise<LookupAddress[]>;

const DEFAULT_DNS_TIMEOUT_MS = 2_000;

const systemResolver: HostResolver = (hostname, family) => dnsLookup(hostname, { all: true, family });

/** A host that did not resolve in time: a failed attempt (or a refused URL), never a hung one. */
export class DnsTimeoutError extends Error {
  override name = 'DnsTimeoutError';
  readonly code = 'EDNSTIMEOUT';
}

/**
 * Every address of `hostname`, or DnsTimeoutError after the timeout. getaddrinfo cannot be
 * cancelled: a late answer is dropped (it still holds a libuv thread until it comes).
 */
async function resolveWithin(options: SafeTargetOptions, hostname: string, family = 0): Promise<LookupAddress[]> {
  const timeoutMs = options.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DnsTimeoutError(`${hostname} did not resolve within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([(options.resolveHost ?? systemResolver)(hostname, family), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Everything outside 2000::/3 is not global unicast (this also catches the deprecated
// IPv4-compatible ::a.b.c.d form, which ipaddr.js does not name).
const ipv6GlobalUnicast = ipaddr.parseCIDR('2000::/3');

/**
 * Why `address` (an IP literal) must not be called, as a phrase like "a loopback address", or
 * null when it is a public unicast address. ipaddr.js names the special ranges (private, loopback,
 * linkLocal, uniqueLocal, multicast, carrierGradeNat, reserved incl. documentation, ...); any named
 * range is refused. IPv4-mapped IPv6 (::ffff:127.0.0.1) is judged as the IPv4 address it maps to.
 */
export function refusedAddressClass(address: string): string | null {
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  if (range !== 'unicast') return `${/^[aeiou]/.test(range) ? 'an' : 'a'} ${range} address`;
  if (parsed.kind() === 'ipv6' && !parsed.match(ipv6GlobalUnicast)) return 'an IPv6 address outside global unicast (2000::/3)';
  return null;
}

/** TARGET_NOT_ALLOWED, its reason logged. */
function notAllowed(options: SafeTargetOptions, host: string, reason: string): UnsafeTargetError {
  options.logger?.debug({ host, reason }, 'webhook or metadata target refused');
  return new UnsafeTargetError(TARGET_NOT_ALLOWED, reason);
}

/** Refuses unless every address is public (and there is one). */
function assertPublicAddresses(options: SafeTargetOptions, host: string, addresses: readonly string[]): void {
  if (addresses.length === 0) throw notAllowed(options, host, `${host} has no address`);
  for (const address of addresses) {
    const refused = refusedAddressClass(address);
    if (refused !== null) throw notAllowed(options, host, `${host === address ? address : `${host} resolves to ${address}, which`} is ${refused}`);
  }
}

/** A resolver error (or DnsTimeoutError) as the refusal; with allowPrivateNetworks it stays itself, as nothing is hidden then. */
function unresolved(options: SafeTargetOptions, host: string, error: unknown): unknown {
  if (options.allowPrivateNetworks) return error;
  return notAllowed(options, host, error instanceof DnsTimeoutError ? error.message : `${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
}

/** URL hostnames carry IPv6 literals in brackets; DNS and net want them bare. */
function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Validates a URL the service is to call: parseable, https, no embedded credentials (the URL is shown in
 * listings and logs), and unless allowPrivateNetworks, every address the host resolves to is public.
 * Returns the parsed URL. Throws UnsafeTargetError with a message fit for a 400 response.
 */
export async function assertSafeTargetUrl(url: string, options: SafeTargetOptions): Promise<URL> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UnsafeTargetError('webhook url is not a valid absolute URL');
  }
  if (parsed.protocol !== 'https:') {
    throw new UnsafeTargetError(`webhook url must use https, not ${parsed.protocol.replace(/:$/, '')}`);
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw new UnsafeTargetError('webhook url must not contain credentials; deliveries are authenticated by their signature');
  }
  if (options.allowPrivateNetworks) return parsed;

  const host = bareHost(parsed.hostname);
  if (isIP(host) !== 0) {
    assertPublicAddresses(options, host, [host]);
    return parsed;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await resolveWithin(options, host);
  } catch (error) {
    throw unresolved(options, host, error);
  }
  assertPublicAddresses(options, host, addresses.map(({ address }) => address));
  return parsed;
}

/**
 * A drop-in for dns.lookup used by the TLS socket: resolves all addresses within the DNS timeout and,
 * unless private networks are allowed, refuses the connection if any is not public (or none came, or
 * not in time), handing the socket only checked addresses. Refusing on any bad address (not just
 * skipping it) keeps the rule, and the answer, the same as assertSafeTargetUrl's.
 */
function checkedLookup(options: SafeTargetOptions): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    resolveWithin(options, hostname, Number(lookupOptions.family ?? 0) || 0).then(
      (addresses) => {
        try {
          if (!options.allowPrivateNetworks) assertPublicAddresses(options, hostname, addresses.map(({ address }) => address));
        } catch (refusal) {
          return callback(refusal as UnsafeTargetError, '');
        }
        const first = addresses[0];
        if (lookupOptions.all) return callback(null, addresses);
        if (first === undefined) return callback(new UnsafeTargetError(`webhook target refused: ${hostname} has no address`), '');
        callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(unresolved(options, hostname, error) as NodeJS.ErrnoException, ''),
    );
  };
}

type SafeDispatcherOptions = SafeTargetOptions & {
  /**
   * Extra trusted CA certificate(s) in PEM, for tests whose receiver uses a self-signed
   * certificate. Production leaves this unset: node's bundled roots plus NODE_EXTRA_CA_CERTS apply.
   * Setting it replaces the default roots for this dispatcher, as in tls.connect.
   */
  ca?: string | string[];
};

/**
 * The undici dispatcher every webhook attempt goes through. It pools keep-alive connections per
 * origin (undici's Agent), so repeated deliveries to one receiver reuse a TLS socket, and its
 * connector refuses non-https origins and, unless allowPrivateNetworks, non-public addresses:
 * IP literals are checked directly (net does no lookup for them) and host names through
 * checkedLookup, which also bounds their resolution. Create one per process and close() it on shutdown.
 */
export function createSafeDispatcher(options: SafeDispatcherOptions): Agent {
  const connectTls = buildConnector({
    ...(options.ca === undefined ? {} : { ca: options.ca }),
    lookup: checkedLookup(options),
  });
  return new Agent({
    connect: (connectOptions, callback) => {
      if (connectOptions.protocol !== 'https:') {
        return callback(new UnsafeTargetError(`webhook target refused: ${connectOptions.protocol.replace(/:$/, '')} is not https`), null);
      }
      const host = bareHost(connectOptions.hostname);
      if (!options.allowPrivateNetworks && isIP(host) !== 0) {
        try {
          assertPublicAddresses(options, host, [host]);
        } catch (refusal) {
          return callback(refusal as UnsafeTargetError, null);
        }
      }
      connectTls(connectOptions, callback);
    },
  });
}
