// The console's only way to the service: openapi-fetch typed by the paths of /api/openapi
// (console/generated/api.d.ts, written by console/build.ts), with API errors turned into sentences.
import createClient from 'openapi-fetch';
import type { paths } from '../generated/api.d.ts';

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });

/** An API error in words: the service's message, with the failing fields of a validation error. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** The error body as sent (row errors of a cohort upload are read from it). */
  readonly body: unknown;
  constructor(status: number, code: string, message: string, body: unknown) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

type ErrorBody = { code?: string; message?: string; errors?: Array<{ path?: string; message: string }>; detail?: string; issue?: Array<{ diagnostics?: string }> };

export function apiError(status: number, body: unknown): ApiError {
  const error = (typeof body === 'object' && body !== null ? body : {}) as ErrorBody;
  const fields = error.errors?.filter((issue) => issue.path).map((issue) => `${issue.path!.replace(/^body\./, '')}: ${issue.message}`).join('; ');
  const text = error.message ?? error.detail ?? error.issue?.[0]?.diagnostics ?? `The service answered ${status}.`;
  const sentence = status === 401 ? `${text} Your session may have ended: sign in again.` : text;
  return new ApiError(status, error.code ?? `HTTP_${status}`, fields && !sentence.includes(fields) ? `${sentence} (${fields})` : sentence, body);
}

/** The data of a call, or its error thrown as an ApiError. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw apiError(response.status, error);
  return data as T;
}

/**
 * Routes being built on other branches (cohorts, exports, audit) are not in this build's
 * /api/openapi yet; until they are, they are called through this untyped JSON helper.
 */
export async function callJson<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = { message: `The service answered ${response.status} with a body that is not JSON.` };
  }
  if (!response.ok) throw apiError(response.status, parsed);
  return parsed as T;
}

/** Whether /api/openapi describes a path: pages for routes not deployed say so instead of failing. */
let documentedPaths: Promise<Set<string>> | null = null;
export async function isDocumented(path: string): Promise<boolean> {
  documentedPaths ??= fetch('/api/openapi').then(async (response) => new Set(Object.keys(((await response.json()) as { paths: object }).paths)));
  return (await documentedPaths).has(path);
}
