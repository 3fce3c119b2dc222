// The audit API: an employer's audit entries for its admins and audit:read keys, listed and exported, and the public key that verifies the
// audit chain's signed checkpoints (scripts/verify-audit-chain.mjs --public-key).
import { instantSchema } from '../http/instant.ts';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { AUDIT_CSV_HEADER, auditExportCsvPages, auditExportEntry, auditExportEntryPages } from '../../projections/audit/export.ts';
import { auditEntry, listAuditEntries, type AuditFilters } from '../../projections/audit/queries.ts';
import type { DatabasePool } from 'slonik';
import { CSV_LINE_END } from '../db/csv.ts';
import type { AppContext } from '../app-context.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../http/page.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';

/** Longest action, actor id or target id a filter accepts (ids here are under 100 characters). */
const MAX_FILTER_LENGTH = 200;

const timeAndActionFilters = z.object({
  action: z.string().min(1).max(MAX_FILTER_LENGTH).regex(/^[a-z0-9_.]+$/, 'lowercase letters, digits, _ and .').optional()
    .meta({ description: 'An exact action (`api_key.created`), or a prefix ending in a dot (`scim.`).' }),
  from: instantSchema.optional().meta({ description: 'Entries at or after this instant.' }),
  to: instantSchema.optional().meta({ description: 'Entries before this instant.' }),
});

const auditQuery = pageQuery(LIST_PAGE).extend(timeAndActionFilters.shape).extend({
  actorId: z.string().min(1).max(MAX_FILTER_LENGTH).optional(),
  targetId: z.string().min(1).max(MAX_FILTER_LENGTH).optional(),
});

const exportQuery = timeAndActionFilters.extend({
  format: z.enum(['ndjson', 'csv']).meta({ description: '`ndjson`: one AuditExportEntry per line; `csv`: a header row, then one row per entry.' }),
});

/** An API key reads the audit trail with audit:read; a session needs the administrator's role (which holds every scope). */
const AUDIT_READ_AUTH = { modes: ['apiKey', 'session'], scope: 'audit:read', role: 'EMPLOYER_ADMIN' } as const;

/** One line per entry, each a JSON object; a page of lines at a time. */
async function* auditNdjson(pool: DatabasePool, employerId: string, filters: AuditFilters) {
  for await (const entries of auditExportEntryPages(pool, employerId, filters)) {
    if (entries.length > 0) yield `${entries.map((entry) => JSON.stringify(entry)).join('\n')}\n`;
  }
}

/** The header row, then the lines Postgres formats (RFC 4180, formulas neutralised), a page at a time. */
async function* auditCsv(pool: DatabasePool, employerId: string, filters: AuditFilters) {
  yield AUDIT_CSV_HEADER;
  for await (const lines of auditExportCsvPages(pool, employerId, filters)) if (lines !== null) yield `${lines}${CSV_LINE_END}`;
}

const auditPage = z.object({ entries: z.array(auditEntry), nextCursor: z.string().nullable() }).meta({ id: 'AuditEntryList' });

const publicKeyBody = z
  .object({
    algorithm: z.literal('Ed25519'),
    keyId: z.string().meta({ description: 'Hex SHA-256 of the SPKI DER; each checkpoint names the key that signed it.' }),
    publicKeyPem: z.string(),
    publicKeySpki: z.string().meta({ description: 'The SPKI DER in base64.' }),
  })
  .meta({ id: 'AuditPublicKey' });

export function auditRoutes(): RoutePlugin {
  return async function auditRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/audit-events',
      summary: "The employer's audit entries, newest first",
      description: 'Every audited action: API keys, webhooks, SSO, SAML, SCIM, alerts and reviews. Filters combine; `from` is inclusive, `to` exclusive.',
      tags: ['Audit'],
      auth: AUDIT_READ_AUTH,
      querystring: auditQuery,
      responses: { 200: { description: 'One page of entries; pass nextCursor as cursor for the next (null on the last page)', schema: auditPage } },
      handler: async ({ query, principal }) => {
        const { limit, cursor, ...filters } = query;
        const { entries, next } = await listAuditEntries(ctx.db.slonik, principal.employerId, filters, {
          limit,
          after: decodeCursor(cursor, z.string().regex(/^\d{1,19}$/)),
        });
        return { entries, nextCursor: encodeCursor(next) };
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/audit-events/export',
      summary: "The employer's audit trail as NDJSON or CSV, streamed",
      description:
        'Every entry under the filters (`from` inclusive, `to` exclusive, `action` exact or a prefix ending in a dot), oldest first, streamed page by page so memory stays ' +
        'flat whatever the trail\'s length. Each entry carries its seal in the audit chain (`chain`: seq, prevHash, hash; CSV columns chainSeq, chainPrevHash, chainHash): ' +
        'the hash is what `scripts/verify-audit-chain.mjs` recomputes from the `events replay` output. CSV: RFC 4180, `details` as JSON text, and every cell a spreadsheet ' +
        'would read as a formula prefixed with an apostrophe.',
      tags: ['Audit'],
      auth: AUDIT_READ_AUTH,
      querystring: exportQuery,
      responses: { 200: { description: 'The entries: `application/x-ndjson` (one AuditExportEntry a line) or `text/csv`', contentType: 'application/x-ndjson', schema: auditExportEntry } },
      handler: async ({ query, principal, reply }) => {
        const { format, ...filters } = query;
        reply.header('content-disposition', `attachment; filename="audit-events.${format}"`);
        // objectMode off: the stream buffers by bytes (one page beyond the socket's), not by 16 pages.
        if (format === 'csv') return reply.type('text/csv; charset=utf-8').send(Readable.from(auditCsv(ctx.db.slonik, principal.employerId, filters), { objectMode: false }));
        return reply.type('application/x-ndjson; charset=utf-8').send(Readable.from(auditNdjson(ctx.db.slonik, principal.employerId, filters), { objectMode: false }));
      },
    });

    // Read when asked, not at registration: describing the routes (the console's build) needs no key.
    const published = () => {
      const { publicKey, keyId } = ctx.auditSigner;
      return {
        algorithm: 'Ed25519' as const,
        keyId,
        publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        publicKeySpki: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      };
    };
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/audit/public-key',
      summary: 'The public key of the audit chain checkpoints',
      description: 'Verifies the signed checkpoints in `events replay` output: `node scripts/verify-audit-chain.mjs replay.ndjson --public-key key.pem`.',
      tags: ['Audit'],
      auth: { public: true },
      responses: { 200: { description: 'The Ed25519 public key', schema: publicKeyBody } },
      handler: async () => published(),
    });
  };
}
