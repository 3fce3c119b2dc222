// POST /api/employer/sso/sp-keys/rotate: a new SAML service-provider key pair (src/sso/saml-sp-keys.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import { rotateSamlSpKey } from '../commands.ts';
import { DEFAULT_SP_KEY_OVERLAP_HOURS, MAX_SP_KEY_OVERLAP_HOURS } from '../saml-sp-keys.ts';
import { configurationOf, ssoConfigurationResponse } from './configuration.ts';

export async function ssoSpKeyRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/sso/sp-keys/rotate',
    summary: "Rotate the service's SAML SP key pair",
    description:
      'A browser session. A new key pair is generated and published in the SP metadata at once (signing and encryption); the key it replaces keeps signing AuthnRequests ' +
      `and decrypting assertions for overlapHours (default ${DEFAULT_SP_KEY_OVERLAP_HOURS}, at most ${MAX_SP_KEY_OVERLAP_HOURS}; 0 replaces it at once), time for the IdP to take the new certificate from the metadata ` +
      'or its administrator to import it. Rotating again during an overlap keeps the earlier end. Audited (sso.sp_key.issue). Also gives an employer its first key.',
    tags: ['SSO'],
    auth: { modes: ['session'], scope: 'sso:manage' },
    body: z.object({ overlapHours: z.number().int().min(0).max(MAX_SP_KEY_OVERLAP_HOURS).optional() }).strict(),
    responses: { 200: { description: 'The configuration with the new key', schema: ssoConfigurationResponse } },
    handler: async ({ principal, body, request }) => {
      await rotateSamlSpKey(ctx, commandContextOf(principal, request.id), { overlapHours: body.overlapHours ?? DEFAULT_SP_KEY_OVERLAP_HOURS });
      return configurationOf(ctx, principal);
    },
  });
}
