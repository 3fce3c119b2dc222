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
