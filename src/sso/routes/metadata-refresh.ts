// POST /api/employer/sso/metadata/refresh: an administrator reads the IdP metadata again now, as the
// daily job does (src/sso/saml-certificates.ts).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import { refreshSamlMetadataNow } from '../commands.ts';
import { metadataFetchOptionsOf } from '../idp-metadata.ts';
import { configurationOf, ssoConfigurationResponse } from './configuration.ts';

export function ssoMetadataRefreshRoutes(options: { idpMetadataCa?: string }) {
  return async function ssoMetadataRefreshRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/sso/metadata/refresh',
      summary: 'Read the IdP metadata again now',
      description:
        'A browser session (the console). Fetches samlMetadataUrl as the daily refresh does: certificates it newly lists are trusted at once, ' +
        'certificates it no longer lists stay trusted for 24 h (samlMetadataRefresh.retiringCertificates), and a new sign-in URL applies; each change is audited ' +
        "(sso.metadata.refresh) and e-mailed to the administrators. It follows the IdP the configuration names: metadata of another entity id is refused. " +
        'A refresh that fails (unreachable, invalid, another IdP) keeps the last good metadata, is audited (sso.metadata.refresh_failed) and shown in samlMetadataRefresh.failure; the answer is still 200. ' +
        '400 SAML_METADATA_URL_NOT_SET without a metadata URL.',
      tags: ['SSO'],
      auth: { modes: ['session'], scope: 'sso:manage' },
      responses: { 200: { description: 'The configuration after the refresh', schema: ssoConfigurationResponse }, 400: { description: 'SAML_METADATA_URL_NOT_SET' } },
      handler: async ({ principal, request }) => {
        await refreshSamlMetadataNow(ctx, commandContextOf(principal, request.id), metadataFetchOptionsOf(ctx.config, options.idpMetadataCa));
        return configurationOf(ctx, principal);
      },
    });
  };
}
