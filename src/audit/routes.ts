// The audit API: an employer's audit entries for its admins, and the public key that verifies the
// audit chain's signed checkpoints (scripts/verify-audit-chain.mjs --public-key).
import { instantSchema } from '../http/instant.ts';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { auditEntry, listAuditEntries } from '../../projections/audit/queries.ts';
import type { AppContext } from '../app-context.ts';
import { decodeCursor, encodeCursor, LIST_PAGE, pageQuery } from '../http/page.ts';
import { defineRoute } from '../http/route.ts';
import type { RoutePlugin } from '../http/server.ts';

/** Longest action, actor id or target id a filter accepts (ids here are under 100 characters). */
const MAX_FILTER_LENGTH = 200;

const auditQuery = pageQuery(LIST_PAGE).extend({
  action: z.string().min(1).max(MAX_FILTER_LENGTH).regex(/^[a-z0-9_.]+$/, 'lowercase letters, digits, _ and .').optional()
    .meta({ description: 'An exact action (`api_key.created`), or a prefix ending in a dot (`scim.`).' }),
  actorId: z.string().min(1).max(MAX_FILTER_LENGTH).optional(),
  targetId: z.string().min(1).max(MAX_FILTER_LENGTH).optional(),
  from: instantSchema.optional().meta({ description: 'Entries at or after this instant.' }),
  to: instantSchema.optional().meta({ description: 'Entries before this instant.' }),
});

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
      auth: { modes: ['session'], role: 'EMPLOYER_ADMIN' },
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
