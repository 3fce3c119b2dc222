// One webhook delivery attempt: POST the signed body, classify the outcome, never throw. Retry
// scheduling, the delivery log and auto-disable are the caller's; this module only reports facts.
import { request, type Dispatcher } from 'undici';
import { currentTraceContext, inSpan, SpanKind, SpanStatusCode } from '../tracing.ts';

/** SPEC section 8 "Webhook attempt timeout": connect, TLS, headers and body together. */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10_000;

/** The delivery log keeps at most this many characters of the receiver's response body. */
export const RESPONSE_BODY_LIMIT_CHARS = 4096;

// Stop reading once this many bytes arrived: enough for RESPONSE_BODY_LIMIT_CHARS characters of
// UTF-8, and a receiver streaming megabytes back cannot make us buffer them.
const RESPONSE_BODY_LIMIT_BYTES = RESPONSE_BODY_LIMIT_CHARS * 4;

export type WebhookAttemptInput = {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** From createSafeDispatcher: the address checks and the connection pool live there. */
  dispatcher: Dispatcher;
  timeoutMs?: number;
};

export type WebhookAttemptResult = {
  /** A 2xx answer. Anything else (3xx included: redirects are not followed) is a failed attempt. */
  ok: boolean;
  /** null when no response arrived (timeout, refused target, network or TLS error). */
  statusCode: number | null;
  latencyMs: number;
  /** At most RESPONSE_BODY_LIMIT_CHARS characters; '' when no response arrived. */
  responseBody: string;
  /** Why no response arrived; null whenever a status code is present. */
  error: string | null;
  /** The receiver's Retry-After on a 429 or 503, in ms from now; null otherwise. */
  retryAfterMs: number | null;
  /** 410 Gone: the receiver asks us to stop (the caller disables the subscription). */
  gone: boolean;
};

/**
 * In a client span whose W3C `traceparent` the request carries (when tracing), so the receiver can
 * join the trace. The span names the target's host only: a URL's path or query may hold a token.
 */
export async function sendWebhookAttempt(input: WebhookAttemptInput): Promise<WebhookAttemptResult> {
  return inSpan('webhook POST', { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'server.address': hostOf(input.url) } }, async (span) => {
    const result = await send({ ...input, headers: { ...input.headers, ...currentTraceContext() } });
    if (result.statusCode !== null) span?.setAttribute('http.response.status_code', result.statusCode);
    if (!result.ok) span?.setStatus({ code: SpanStatusCode.ERROR });
    return result;
  });
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

async function send(input: WebhookAttemptInput): Promise<WebhookAttemptResult> {
  const timeoutMs = input.timeoutMs ?? WEBHOOK_ATTEMPT_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  const startedAt = performance.now();
  const elapsed = () => Math.round(performance.now() - startedAt);
  try {
    const response = await request(input.url, {
      method: 'POST',
      body: input.body,
      headers: input.headers,
      dispatcher: input.dispatcher,
      signal,
    });
    const responseBody = await readTruncated(response.body);
    const { statusCode } = response;
    const retryAfter = statusCode === 429 || statusCode === 503 ? headerValue(response.headers['retry-after']) : undefined;
    return {
      ok: statusCode >= 200 && statusCode < 300,
      statusCode,
      latencyMs: elapsed(),
      responseBody,
      error: null,
      retryAfterMs: retryAfter === undefined ? null : parseRetryAfter(retryAfter, Date.now()),
      gone: statusCode === 410,
    };
  } catch (error) {
    return {
      ok: false,
      statusCode: null,
      latencyMs: elapsed(),
      responseBody: '',
      error: signal.aborted ? `timed out after ${timeoutMs} ms` : describeError(error),
      retryAfterMs: null,
      gone: false,
    };
  }
}

/**
 * Retry-After is either delay-seconds or an HTTP date (RFC 9110 section 10.2.3). Returns ms from
 * `now` (never negative), or null when the value is neither.
 */
export function parseRetryAfter(value: string, now: number): number | null {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // All three HTTP date forms start with the day name; Date.parse alone would also take "-5" or "2026".
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/.test(trimmed)) return null;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function readTruncated(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let received = 0;
  // Leaving the loop early destroys the stream (and that one connection); a body read to its end
  // leaves the connection in the pool for the next delivery.
  for await (const chunk of body) {
    chunks.push(chunk as Buffer);
    received += (chunk as Buffer).length;
    if (received >= RESPONSE_BODY_LIMIT_BYTES) break;
  }
  // Postgres text cannot hold NUL: a receiver answering one must not make the attempt unloggable.
  return Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_BODY_LIMIT_CHARS).replaceAll('\u0000', '\uFFFD');
}

/** A one-line reason with the error code when there is one, e.g. "ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:8443". */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  const code = (error as { code?: unknown }).code;
  return `${typeof code === 'string' ? `${code}: ` : ''}${error.message}${cause}`;
}
