// Where a browser may be sent after a SAML login (`returnTo`): a path on this service, or a URL on an
// origin listed in RETURN_TO_ALLOWED_ORIGINS. Anything else would make the service an open redirect.
import type { Config } from '../config.ts';

const MAX_RETURN_TO_LENGTH = 2048;

/**
 * The normalised return target (a path starting with a single '/', or an absolute URL on an allowed
 * origin), or null when it is refused. The value is resolved the way a browser would resolve it against
 * our own URL, so '//evil.example' or 'http:evil.example' (from https) land on another origin and are refused.
 */
export function normaliseReturnTo(value: string, config: Pick<Config, 'PUBLIC_BASE_URL' | 'RETURN_TO_ALLOWED_ORIGINS'>): string | null {
  // Control characters and backslashes are refused outright: browsers treat '\' as '/' in URLs.
  if (value.length === 0 || value.length > MAX_RETURN_TO_LENGTH || /[\u0000-\u001f\u007f\\]/.test(value)) return null;
  let resolved: URL;
  try {
    resolved = new URL(value, config.PUBLIC_BASE_URL);
  } catch {
    return null;
  }
  if (resolved.protocol !== 'https:' && resolved.protocol !== 'http:') return null;
  if (resolved.origin === new URL(config.PUBLIC_BASE_URL).origin) {
    const path = `${resolved.pathname}${resolved.search}${resolved.hash}`;
    return path.startsWith('//') ? null : path;
  }
  return allowedOrigins(config.RETURN_TO_ALLOWED_ORIGINS).has(resolved.origin) ? resolved.href : null;
}

function allowedOrigins(list: string): Set<string> {
  const origins = new Set<string>();
  for (const entry of list.split(',').map((item) => item.trim()).filter(Boolean)) {
    try {
      origins.add(new URL(entry).origin);
    } catch {
      // A malformed entry allows nothing.
    }
  }
  return origins;
}

/** The URL the browser is sent to after the login: the sign-in exchange itself or the return target carrying the token. */
export function postLoginLocation(signIn: { signInUrl: string; token: string }, returnTo: string | null): string {
  if (returnTo === null) return signIn.signInUrl;
  if (returnTo.startsWith('/')) return `${signIn.signInUrl}&next=${encodeURIComponent(returnTo)}`;
  const target = new URL(returnTo);
  target.searchParams.set('token', signIn.token);
  return target.href;
}
