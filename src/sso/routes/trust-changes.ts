// The pending SAML trust change an API key proposed: an administrator's session confirms it (it takes
// effect), or either discards it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { ID_MAX } from '../../http/limits.ts';
import { defineRoute } from '../../http/route.ts';
import { confirmSsoTrustChange, discardSsoTrustChange } from '../commands.ts';
import { configurationOf, SSO_AUTH, ssoConfigurationResponse } from './configuration.ts';

const changeParams = z.object({ changeId: z.string().max(ID_MAX) });

export async function ssoTrustChangeRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/employer/sso/trust-changes/:changeId/confirm',
    summary: 'Confirm the pending SAML trust change: it takes effect',
    description:
      "An administrator's browser session only (an API key is 403 SESSION_REQUIRED): the change an API key proposed takes effect, audited and e-mailed to the administrators. " +
      'The id must be the pending change\'s (as GET /api/employer/sso shows it), else 404 TRUST_CHANGE_NOT_PENDING: a replaced proposal is never confirmed by the id of the one it replaced.',
    tags: ['SSO'],
    auth: { modes: ['session'], scope: 'sso:manage', role: 'EMPLOYER_ADMIN' },
    params: changeParams,
    responses: { 200: { description: 'The configuration, the change in effect', schema: ssoConfigurationResponse }, 404: { description: 'TRUST_CHANGE_NOT_PENDING' } },
    handler: async ({ principal, params, request }) => {
      await confirmSsoTrustChange(ctx, commandContextOf(principal, request.id), { changeId: params.changeId });
      return configurationOf(ctx, principal);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'DELETE',
    url: '/api/employer/sso/trust-changes/:changeId',
    summary: 'Discard the pending SAML trust change',
    description: 'Nothing in effect changes. An administrator\'s session or a key with sso:manage (discarding takes no trust away); audited and e-mailed to the administrators. 404 TRUST_CHANGE_NOT_PENDING unless the id is the pending change\'s.',
    tags: ['SSO'],
    auth: SSO_AUTH,
    params: changeParams,
    responses: { 200: { description: 'The configuration, with no pending change', schema: ssoConfigurationResponse }, 404: { description: 'TRUST_CHANGE_NOT_PENDING' } },
    handler: async ({ principal, params, request }) => {
      await discardSsoTrustChange(ctx, commandContextOf(principal, request.id), { changeId: params.changeId });
      return configurationOf(ctx, principal);
    },
  });
}
