// Structured logs (pino). Secrets and personal data never reach them: credential headers and
// token-like fields are redacted, and query strings keep their parameter names but lose their values,
// but for a few parameters known to carry none.
import pino, { type DestinationStream, type Logger } from 'pino';

const REDACTED = '[REDACTED]';

/**
 * The query parameters whose values are logged: paging, result options and filters on non-personal
 * fields. Every other value is redacted, whatever the route: an allow-list, because the parameters
 * that carry personal data are open-ended (FHIR search alone has email, name, given, family, telecom,
 * identifier, birthdate, address, with modifiers and chains; SCIM's filter; the roster's search;
 * `next` and `returnTo`, which can carry a whole query string; tokens) and a new route's new
 * parameter must not leak until someone adds it to a deny-list.
 */
const LOGGED_QUERY_VALUES = new Set([
  'limit', 'cursor', 'count', 'startIndex', '_count', '_cursor',
  '_sort', '_format', '_summary', '_elements', '_total', '_type', '_outputFormat', 'attributes', 'excludedAttributes',
  'status', 'event', 'action', 'from', 'to', '_since',
]);

/** A parameter name as routes define them (FHIR modifiers and chains included); anything else could be data. */
const PARAMETER_NAME = /^[A-Za-z_][\w.:-]{0,63}$/;

/** The URL as logged: the path, and each query parameter's name with its value redacted unless LOGGED_QUERY_VALUES has it. */
export function redactUrl(url: string): string {
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const parameters = url.slice(queryStart + 1).split('&').map((parameter) => {
    if (parameter === '') return parameter;
    const equals = parameter.indexOf('=');
    const name = equals === -1 ? parameter : parameter.slice(0, equals);
    if (!PARAMETER_NAME.test(name)) return REDACTED;
    return equals === -1 || LOGGED_QUERY_VALUES.has(name) ? parameter : `${name}=${REDACTED}`;
  });
  return `${url.slice(0, queryStart)}?${parameters.join('&')}`;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]',
          '*.rawKey', '*.signingSecret', '*.scimBearerToken', '*.token', '*.password', '*.secret',
        ],
        censor: REDACTED,
      },
      serializers: {
        req: (request: { method: string; url: string; ip?: string; id?: string }) => ({
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        }),
      },
    },
    destination,
  );
}
