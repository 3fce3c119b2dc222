// The employer's SCIM request log (table scim_request_log, migration 0080): one row per authenticated
// SCIM request, written after the response has gone, read by GET /api/employer/scim-requests and the
// console's SSO page, pruned by the retention job. It holds no personal values: the path is the
// route's template with only id-shaped parameters filled in, the query string keeps its parameter
// names (values only for paging), bodies are never read, and the error detail has quoted values and
// anything like an address redacted (IdPs' user names are e-mails).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { pageOf, pageQuery, type Keyset } from '../http/page.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** scimType and detail of a SCIM error answer, taken from its body for the request log. */
    scimOutcome?: { scimType: string | null; detail: string | null };
  }
}

const REDACTED = '…';
const DETAIL_MAX = 500;
/** Parameters whose values are kept: paging numbers. */
const KEPT_QUERY_VALUES = new Set(['startIndex', 'count']);
/** Path parameters kept as sent: our ids (UUIDs, `grp_...`) and discovery names; anything else is redacted. */
const ID_SHAPE = /^[A-Za-z0-9_.:-]{1,100}$/;
/** Details ending in a library's own message, which may quote what the client sent: cut at the colon. */
const LIBRARY_TAILS = [/^(The filter cannot be parsed):.*/s, /^(Cannot apply the operation on [^:]*):.*/s, /^(Not a SCIM PatchOp request):.*/s];

/**
 * The path as logged: the route's template, its id-shaped parameters filled in (not for a 404: an id
 * that is not the employer's, perhaps another's, is not recorded); the query's names only.
 */
export function loggedPath(request: FastifyRequest, status: number): string {
  const template = request.routeOptions.url ?? request.url.split('?')[0]!;
  const params = (request.params ?? {}) as Record<string, unknown>;
  const path = template.replace(/:(\w+)/g, (placeholder, name: string) => {
    const value = params[name];
    return status !== 404 && typeof value === 'string' && ID_SHAPE.test(value) && !value.includes('@') ? value : placeholder;
  });
  const query = request.url.includes('?') ? new URLSearchParams(request.url.slice(request.url.indexOf('?') + 1)) : null;
  if (!query || [...query.keys()].length === 0) return path;
  const parts = [...query].slice(0, 20).map(([name, value]) => {
    const safeName = /^[A-Za-z0-9_.]{1,40}$/.test(name) ? name : REDACTED;
    return `${safeName}=${KEPT_QUERY_VALUES.has(name) && /^\d{1,9}$/.test(value) ? value : REDACTED}`;
  });
  return `${path}?${parts.join('&')}`;
}

/** A 404's detail names the id sent, perhaps another employer's: not recorded, as in the path. */
function withoutParams(detail: string, request: FastifyRequest): string {
  const values = Object.values((request.params ?? {}) as Record<string, unknown>).filter((value): value is string => typeof value === 'string' && value.length > 0);
  return values.reduce((text, value) => text.replaceAll(value, REDACTED), detail);
}

/** An error detail without the values a client sent. */
export function redactDetail(detail: string): string {
  let text = detail;
  for (const tail of LIBRARY_TAILS) text = text.replace(tail, '$1.');
  return text
    .replace(/"[^"]*"|'[^']*'|`[^`]*`/g, `"${REDACTED}"`)
    .replace(/\S*@\S*/g, REDACTED)
    .slice(0, DETAIL_MAX);
}

/** Hooks of the SCIM plugin's scope: the error's scimType and detail from the body sent, then one row per request. */
export function recordScimRequests(fastify: FastifyInstance, ctx: AppContext): void {
  fastify.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400 && typeof payload === 'string' && request.scimCaller) {
      try {
        const body = JSON.parse(payload) as { scimType?: unknown; detail?: unknown };
        request.scimOutcome = {
          scimType: typeof body.scimType === 'string' ? body.scimType.slice(0, 40) : null,
          detail: typeof body.detail === 'string' ? redactDetail(reply.statusCode === 404 ? withoutParams(body.detail, request) : body.detail) : null,
        };
      } catch {
        // Not a SCIM envelope: status only.
      }
    }
    return payload;
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const caller = request.scimCaller;
    // Requests refused before a token named the employer belong to no employer's log.
    if (!caller) return;
    const durationMs = Math.round(reply.elapsedTime);
    const receivedAt = new Date(Date.now() - durationMs).toISOString();
    await ctx.db.slonik
      .query(sql.unsafe`
        INSERT INTO scim_request_log (employer_id, request_id, received_at, method, path, status, scim_type, detail, duration_ms)
        VALUES (${caller.employerId}, ${String(request.id).slice(0, 128)}, ${receivedAt}, ${request.method}, ${loggedPath(request, reply.statusCode).slice(0, 1000)},
          ${reply.statusCode}, ${request.scimOutcome?.scimType ?? null}, ${request.scimOutcome?.detail ?? null}, ${durationMs})`)
      .catch((error: unknown) => request.log.warn({ err: error }, 'SCIM request log entry not written'));
  });
}

export const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;

export const scimRequestFilters = pageQuery({ default: 50, max: 200 }).extend({
  status: z.enum(STATUS_CLASSES).optional().meta({ description: 'Only answers of this class (4xx: the IdP\'s mistakes and refusals).' }),
});

export const scimRequestEntry = z
  .object({
    id: z.string(),
    requestId: z.string().meta({ description: 'x-request-id of the request' }),
    receivedAt: z.string(),
    method: z.string(),
    path: z.string().meta({ description: 'The path with its ids; query values (filters) redacted but for startIndex and count' }),
    status: z.number().int(),
    scimType: z.string().nullable().meta({ description: 'scimType of a SCIM error answer (RFC 7644 table 9)' }),
    detail: z.string().nullable().meta({ description: 'detail of a SCIM error answer, values the IdP sent redacted' }),
    durationMs: z.number().int(),
  })
  .meta({ id: 'ScimRequest' });
export type ScimRequestEntry = z.infer<typeof scimRequestEntry>;

const row = z.object({
  id: z.string(), request_id: z.string(), received_at: z.string(), cursor_at: z.string(), method: z.string(), path: z.string(),
  status: z.number(), scim_type: z.string().nullable(), detail: z.string().nullable(), duration_ms: z.number(),
});

/** One page of an employer's SCIM requests, newest first. */
export async function listScimRequests(
  db: CommonQueryMethods,
  employerId: string,
  filters: { limit: number; status?: (typeof STATUS_CLASSES)[number] | undefined; after: Keyset | null },
): Promise<{ requests: ScimRequestEntry[]; next: Keyset | null }> {
  const conditions = [sql.fragment`employer_id = ${employerId}`];
  if (filters.status) {
    const low = Number(filters.status[0]) * 100;
    conditions.push(sql.fragment`status >= ${low} AND status < ${low + 100}`);
  }
  if (filters.after) conditions.push(sql.fragment`(received_at, id) < (${filters.after.at}::timestamptz, ${filters.after.id}::bigint)`);
  const rows = await db.any(sql.type(row)`
    SELECT id::text, request_id, to_json(received_at) #>> '{}' AS received_at, received_at::text AS cursor_at, method, path, status, scim_type, detail, duration_ms
    FROM scim_request_log WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY received_at DESC, id DESC LIMIT ${filters.limit + 1}`);
  const { page, next } = pageOf(rows, filters.limit, (entry) => ({ at: entry.cursor_at, id: entry.id }));
  return {
    requests: page.map((entry) => ({
      id: entry.id, requestId: entry.request_id, receivedAt: entry.received_at, method: entry.method, path: entry.path,
      status: entry.status, scimType: entry.scim_type, detail: entry.detail, durationMs: entry.duration_ms,
    })),
    next,
  };
}
