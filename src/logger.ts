// Structured logs (pino). Secrets never reach them: credential headers and token-like fields are
// redacted, and query strings lose their token parameters.
import pino, { type DestinationStream, type Logger } from 'pino';

const SECRET_QUERY_PARAMS = /([?&](?:token|access_token|api_key|apikey|key|SAMLResponse|SAMLRequest|RelayState|code)=)[^&]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY_PARAMS, '$1[REDACTED]');
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
        censor: '[REDACTED]',
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
