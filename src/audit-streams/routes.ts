// Audit stream management: an administrator's browser session only. An API key, audit:read
// included, may not manage streams: pointing one at a new URL sends the whole audit log there, which
// is more than reading it (a key that leaked must not become a standing copy of the audit trail).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { getAuditStream, listAuditStreams, auditStreamView } from '../../projections/audit-streams/queries.ts';
import type { AppContext } from '../app-context.ts';
import { commandContextOf } from '../auth/principal.ts';
import { ID_MAX, NAME_MAX, URL_MAX } from '../http/limits.ts';
import { defineRoute } from '../http/route.ts';
import { createAuditStream, deleteAuditStream, MAX_STREAMS_PER_EMPLOYER, updateAuditStream } from './commands.ts';
import { AUDIT_STREAM_PRESETS, AUDIT_STREAM_STATUSES } from './events.ts';
import { BATCH_ID_HEADER } from './presets.ts';

const auth = { modes: ['session'], role: 'EMPLOYER_ADMIN' } as const;
const tags = ['Audit'];
/** Longest vendor credential accepted (Splunk HEC tokens are UUIDs, Datadog API keys 32 hex characters). */
const DESTINATION_TOKEN_MAX = 512;

const url = z.string().trim().min(1).max(URL_MAX).meta({
  description: 'https only; the host must resolve to public addresses only (400 INVALID_AUDIT_STREAM_URL otherwise, as for webhooks). ' +
    'For splunk_hec and datadog the origin of the intake (e.g. https://http-intake.logs.datadoghq.eu): the documented path is posted to.',
});
const name = z.string().trim().min(1).max(NAME_MAX);
const token = z.string().trim().min(1).max(DESTINATION_TOKEN_MAX).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces').meta({
  description: 'splunk_hec: the HEC token (sent as `Authorization: Splunk <token>`); datadog: the API key (`DD-API-KEY`). Stored encrypted, never shown again. Not for ndjson.',
});

const createBody = z.strictObject({
  name,
  preset: z.enum(AUDIT_STREAM_PRESETS).meta({
    description: 'ndjson: `POST <url>` with `application/x-ndjson`, one entry a line, signed like webhooks (`x-webhook-signature`, Standard Webhooks `webhook-*` headers); ' +
      'splunk_hec: `POST /services/collector/event`, one HEC event object per entry; datadog: `POST /api/v2/logs`, a JSON array of log items (at most 1,000).',
  }),
  url,
  token: token.optional(),
  start: z.enum(['earliest', 'latest']).optional().meta({ description: 'earliest (default): the whole audit log, oldest first; latest: entries from now on.' }),
});
const patchBody = z
  .strictObject({ name: name.optional(), url: url.optional(), token: token.optional(), status: z.enum(AUDIT_STREAM_STATUSES).optional() })
  .refine((body) => Object.keys(body).length > 0, 'give at least one of name, url, token, status');

const createdStream = auditStreamView
  .extend({ signingSecret: z.string().nullable().meta({ description: 'ndjson only: whsec_ + base64 of 32 random bytes, shown only here; null for the vendors.' }) })
  .meta({ id: 'CreatedAuditStream' });
const params = z.object({ streamId: z.string().max(ID_MAX) });

const DELIVERY =
  `Entries go in audit chain order, in batches (AUDIT_STREAM_BATCH_MAX_ENTRIES, AUDIT_STREAM_BATCH_MAX_BYTES), each with its chain seq and hash; the cursor moves only after a 2xx. ` +
  `At least once: a batch not acknowledged is sent again whole, with the same entries and the same \`${BATCH_ID_HEADER}\` (and \`webhook-id\` for ndjson), after a backoff from AUDIT_STREAM_RETRY_BASE_MS doubling up to 15 minutes; ` +
  'dropping batch ids already received makes it exactly once.';

export async function auditStreamRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/audit-streams',
    summary: "Stream the employer's audit entries to an HTTPS destination",
    description: `${DELIVERY} At most ${MAX_STREAMS_PER_EMPLOYER} streams an employer (409 AUDIT_STREAM_LIMIT). splunk_hec and datadog need token (400 TOKEN_REQUIRED); ndjson takes none (400 SECRET_NOT_SETTABLE).`,
    tags,
    auth,
    body: createBody,
    idempotent: true,
    responses: { 201: { description: 'The stream, with the ndjson signing secret', schema: createdStream } },
    handler: async ({ body, principal, request, reply }) => {
      const { streamId, signingSecret } = await createAuditStream(ctx, commandContextOf(principal, request.id), {
        name: body.name, preset: body.preset, url: body.url, token: body.token ?? null, start: body.start ?? 'earliest',
      });
      reply.status(201).header('cache-control', 'no-store');
      return { ...(await getAuditStream(ctx.db.slonik, principal.employerId, streamId)), signingSecret };
    },
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/audit-streams',
    summary: "The employer's audit streams, each with its delivery state and lag",
    description: `All of them, oldest first (at most ${MAX_STREAMS_PER_EMPLOYER}).`,
    tags,
    auth,
    responses: { 200: { description: 'The streams (never their credentials)', schema: z.object({ streams: z.array(auditStreamView) }).meta({ id: 'AuditStreamList' }) } },
    handler: async ({ principal }) => ({ streams: await listAuditStreams(ctx.db.slonik, principal.employerId) }),
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/employer/audit-streams/:streamId',
    summary: 'One audit stream: delivery state and lag',
    tags,
    auth,
    params,
    responses: { 200: { description: 'The stream (never its credential)', schema: auditStreamView }, 404: { description: 'No such stream' } },
    handler: async ({ params: { streamId }, principal }) => getAuditStream(ctx.db.slonik, principal.employerId, streamId),
  });

  defineRoute(fastify, ctx, {
    method: 'PATCH',
    url: '/api/employer/audit-streams/:streamId',
    summary: 'Change, pause (status paused) or resume (status active) an audit stream',
    description: 'A paused stream keeps its cursor and resumes where it stopped. Any change tries a failing batch again at once. token replaces a vendor credential (ndjson: 400 SECRET_NOT_SETTABLE).',
    tags,
    auth,
    params,
    body: patchBody,
    responses: { 200: { description: 'The stream after the change', schema: auditStreamView }, 404: { description: 'No such stream' } },
    handler: async ({ params: { streamId }, body, principal, request }) => {
      await updateAuditStream(ctx, commandContextOf(principal, request.id), { streamId, ...body });
      return getAuditStream(ctx.db.slonik, principal.employerId, streamId);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'DELETE',
    url: '/api/employer/audit-streams/:streamId',
    summary: 'Delete an audit stream; nothing more is sent',
    tags,
    auth,
    params,
    responses: { 204: { description: 'Deleted' }, 404: { description: 'No such stream' } },
    handler: async ({ params: { streamId }, principal, request, reply }) => {
      await deleteAuditStream(ctx, commandContextOf(principal, request.id), { streamId });
      return reply.status(204).send();
    },
  });
}
