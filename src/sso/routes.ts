// HTTP endpoints of SSO: the employer's configuration (GET, POST /api/employer/sso), its pending SAML
// trust change (confirm, discard), and the SAML service-provider endpoints (start, assertion consumer,
// metadata), which are public: the browser arrives there before it has a session, and the callback
// authenticates by the signed response.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf, type Principal } from '../auth/principal.ts';
import type { RoutePlugin } from '../http/server.ts';
import { defineRoute } from '../http/route.ts';
import {
  ID_MAX, SAML_CALLBACK_BODY_LIMIT_BYTES, SAML_RESPONSE_MAX, SAML_RESPONSE_XML_MAX_BYTES, SAML_XML_ATTRIBUTES_MAX, SAML_XML_DEPTH_MAX, SAML_XML_ELEMENTS_MAX, URL_MAX,
} from '../http/limits.ts';
import { confirmSsoTrustChange, discardSsoTrustChange, updateSsoConfiguration } from './commands.ts';
import { getSsoConfiguration, type PendingTrustChangeView, type SsoConfigurationView } from '../../projections/sso/queries.ts';
import { SAML_TRUST_SETTINGS } from './events.ts';
import { generateSpMetadata } from './saml.ts';
import { PER_CLIENT_WAITING_MAX, WAITING_MAX } from './saml-verifier.ts';
import { admitSamlCallback, finishSamlLogin, serviceProviderUrls, spNameIdFormat, startSamlLogin, type SamlRuntime } from './saml-flow.ts';
import { describeCertificate, ssoConfigurationUpdateSchema } from './settings-input.ts';

export const SCIM_BASE_PATH = '/api/scim/v2';

const certificateDescriptions = z.array(z.object({ subject: z.string(), fingerprintSha256: z.string(), validTo: z.string() }));

const pendingTrustChangeResponse = z
  .object({
    changeId: z.string().meta({ description: 'Confirm or discard the change by this id.' }),
    proposedAt: z.string(),
    proposedBy: z.object({ type: z.string(), id: z.string() }).meta({ description: 'Who proposed it: `apiKey` and the key id.' }),
    changes: z
      .object({
        samlEnabled: z.boolean(),
        samlMetadataUrl: z.string().nullable(),
        samlEntryPoint: z.string().nullable(),
        samlCertificate: z.string().nullable(),
        samlCertificates: certificateDescriptions,
        samlIssuer: z.string().nullable(),
        samlNameIdFormat: z.string().nullable(),
        samlEmailAttribute: z.string().nullable(),
      })
      .partial()
      .meta({ description: 'The values it would put in effect; settings it leaves as they are are absent.' }),
  });

const ssoConfigurationResponse = z
  .object({
    samlEnabled: z.boolean(),
    samlMetadataUrl: z.string().nullable(),
    samlEntryPoint: z.string().nullable(),
    samlCertificate: z.string().nullable().meta({ description: 'The IdP signing certificate(s) as PEM.' }),
    samlCertificates: certificateDescriptions,
    samlIssuer: z.string().nullable(),
    samlNameIdFormat: z.string().nullable(),
    samlEmailAttribute: z.string().nullable(),
    samlFirstNameAttribute: z.string().nullable(),
    samlLastNameAttribute: z.string().nullable(),
    scimEnabled: z.boolean(),
    scimTokenExists: z.boolean(),
    scimTokenRotatedAt: z.string().nullable(),
    spEntityId: z.string().meta({ description: 'For the IdP: the SP entity id (audience).' }),
    acsUrl: z.string().meta({ description: 'For the IdP: the assertion consumer service URL (HTTP-POST).' }),
    spMetadataUrl: z.string(),
    spNameIdFormat: z.string(),
    scimBaseUrl: z.string(),
    updatedAt: z.string().nullable(),
    pendingTrustChange: pendingTrustChangeResponse.nullable().meta({ description: 'A SAML trust change an API key proposed: not in effect until an administrator confirms it.' }),
  })
  .meta({ id: 'SsoConfiguration' });

const ssoUpdateResponse = ssoConfigurationResponse
  .extend({ scimBearerToken: z.string().optional().meta({ description: 'Present once: when SCIM is first enabled or the token is rotated. Store it now.' }) })
  .meta({ id: 'SsoConfigurationUpdated' });

function presentConfiguration(ctx: AppContext, employerId: string, view: SsoConfigurationView): z.infer<typeof ssoConfigurationResponse> {
  const { samlCertificates, ...settings } = view.settings;
  const { spEntityId, acsUrl, spMetadataUrl } = serviceProviderUrls(ctx, employerId);
  return {
    ...settings,
    samlCertificate: samlCertificates.length > 0 ? samlCertificates.join('\n') : null,
    samlCertificates: samlCertificates.map(describeCertificate),
    scimTokenExists: view.scimTokenExists,
    scimTokenRotatedAt: view.scimTokenRotatedAt,
    spEntityId,
    acsUrl,
    spMetadataUrl,
    spNameIdFormat: spNameIdFormat(view.settings),
    scimBaseUrl: `${ctx.config.PUBLIC_BASE_URL}${SCIM_BASE_PATH}`,
    updatedAt: view.updatedAt,
    pendingTrustChange: view.pendingTrustChange && presentPendingTrustChange(view.pendingTrustChange),
  };
}

function presentPendingTrustChange(pending: PendingTrustChangeView): z.infer<typeof pendingTrustChangeResponse> {
  const { samlCertificates, ...changes } = pending.changes;
  return {
    ...pending,
    changes: {
      ...changes,
      ...(samlCertificates ? { samlCertificate: samlCertificates.length > 0 ? samlCertificates.join('\n') : null, samlCertificates: samlCertificates.map(describeCertificate) } : {}),
    },
  };
}

/** Trust settings read as the request body names them. */
const TRUST_FIELDS = SAML_TRUST_SETTINGS.map((setting) => (setting === 'samlCertificates' ? 'samlCertificate' : setting)).join(', ');

const employerParams = z.object({ employerId: z.string().max(ID_MAX).regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be an employer id') });
const SSO_AUTH = { modes: ['session', 'apiKey'], scope: 'sso:manage' } as const;
const changeParams = z.object({ changeId: z.string().max(ID_MAX) });

const SAML_CALLBACK_URL = '/api/auth/saml/callback/:employerId';

export function ssoRoutes(options: { idpMetadataCa?: string }, saml: SamlRuntime): RoutePlugin {
  return async function registerSsoRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    const configurationOf = async (principal: Principal) => presentConfiguration(ctx, principal.employerId, await getSsoConfiguration(ctx.db.slonik, principal.employerId));
    // The callback's limit is spent before its body is read or parsed (src/sso/saml-flow.ts).
    fastify.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.url === SAML_CALLBACK_URL) admitSamlCallback(saml, request, reply);
    });
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/sso',
      summary: 'The SSO configuration and what the IdP administrator needs',
      description: 'Never returns the SCIM token, only whether one exists and when it was issued. `pendingTrustChange` is a SAML trust change an API key proposed, not in effect until an administrator confirms it.',
      tags: ['SSO'],
      auth: SSO_AUTH,
      responses: { 200: { description: 'The configuration', schema: ssoConfigurationResponse } },
      handler: async ({ principal }) => configurationOf(principal),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/sso',
      summary: 'Update the SSO configuration (partial)',
      description:
        'Absent fields keep their values. samlMetadataUrl is fetched now and fills entry point, certificate(s) and issuer. ' +
        'samlEnabled: true needs entry point, certificate and issuer. scimEnabled: true (first time) or rotateScimToken: true returns scimBearerToken once; disabling SCIM revokes it.\n\n' +
        `**SAML trust.** ${TRUST_FIELDS} decide whom a SAML response signs in, administrators included. ` +
        "An administrator's session changes them at once (200). With an API key they are not applied: they become the employer's pending trust change " +
        '(`pendingTrustChange`, answered 202), which takes effect only when an administrator confirms it in a browser session ' +
        '(POST /api/employer/sso/trust-changes/{changeId}/confirm); until then SAML signs in as before. A later proposal replaces the pending one (keeping the values it does not name) under a new id. ' +
        "samlEnabled: false applies at once with a key too (it only takes trust away); the other fields always apply at once. Every trust change (proposed, confirmed, discarded, or made directly) is audited and e-mailed to the employer's administrators.\n\n" +
        '**SCIM token.** Issuing and rotating it is within sso:manage ("Manage SSO and SCIM configuration"): the token provisions PATIENT users only and signs no one in, ' +
        "and it never changes an administrator's userName or sign-in e-mail (400 mutability; it may deactivate one, which revokes the keys that administrator created).",
      tags: ['SSO'],
      auth: SSO_AUTH,
      body: ssoConfigurationUpdateSchema,
      responses: {
        200: { description: 'The configuration after the update', schema: ssoUpdateResponse },
        202: { description: 'API key: the other fields applied, the SAML trust changes pending an administrator (in pendingTrustChange)', schema: ssoUpdateResponse },
      },
      handler: async ({ principal, body, request, reply }) => {
        reply.header('cache-control', 'no-store'); // may carry the SCIM token
        const { scimBearerToken, proposedTrustChangeId } = await updateSsoConfiguration(ctx, commandContextOf(principal, request.id), {
          update: body,
          metadataFetch: { allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, ...(options.idpMetadataCa ? { ca: options.idpMetadataCa } : {}) },
          // Only an administrator's session may already sign in as anyone the new trust could sign in.
          trustChanges: principal.kind === 'session' ? 'apply' : 'propose',
        });
        const configuration = await configurationOf(principal);
        if (proposedTrustChangeId) reply.status(202);
        return scimBearerToken ? { ...configuration, scimBearerToken } : configuration;
      },
    });

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
        return configurationOf(principal);
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
        return configurationOf(principal);
      },
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/auth/saml/start/:employerId',
      summary: 'Start a SAML login (redirect to the IdP)',
      description: 'HTTP-Redirect binding. `returnTo` (a path, or a URL on an origin in RETURN_TO_ALLOWED_ORIGINS) is where the browser lands after signing in.',
      tags: ['SSO'],
      auth: { public: true },
      params: employerParams,
      querystring: z.object({ returnTo: z.string().max(URL_MAX).optional() }),
      responses: { 302: { description: 'To the IdP' }, 400: { description: 'SAML not enabled, or returnTo not allowed' }, 404: { description: 'Unknown employer' } },
      handler: async ({ params, query, reply }) => reply.redirect(await startSamlLogin(ctx, saml, params.employerId, query.returnTo), 302),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: SAML_CALLBACK_URL,
      summary: 'SAML assertion consumer service (HTTP-POST binding)',
      description:
        'Validates the response, resolves or provisions the user, and redirects with a one-time sign-in token. Refusals are 4xx with `reason`; ' +
        'those of an employer whose SAML is on are counted per minute and reason, each minute one audit entry (auth.saml.logins_refused), and the others are not recorded. ' +
        'Each callback spends one of its client address\'s allowance (an IPv6 address by its /64; 5/s, bursts of 50; a login that succeeds gives it back) before its body is read: past it, 429. ' +
        `The response is at most ${SAML_RESPONSE_XML_MAX_BYTES / 1024} KiB of XML, ${SAML_XML_ELEMENTS_MAX} elements, ${SAML_XML_ATTRIBUTES_MAX} attributes and ${SAML_XML_DEPTH_MAX} levels deep (else 401, reason MALFORMED), ` +
        'checked before it is parsed; it is parsed and verified in worker threads, responses waiting their turn round-robin by client address: ' +
        `more than ${PER_CLIENT_WAITING_MAX} waiting from one address is 429, more than ${WAITING_MAX} in all 503 SAML_BUSY, both with retry-after.`,
      tags: ['SSO'],
      auth: { public: true },
      params: employerParams,
      bodyLimit: SAML_CALLBACK_BODY_LIMIT_BYTES,
      body: z.object({
        SAMLResponse: z.string().min(1).max(SAML_RESPONSE_MAX),
        RelayState: z.string().max(URL_MAX).optional().meta({ description: 'Accepted and ignored: returnTo is kept server-side with the request.' }),
      }),
      responses: {
        302: { description: 'To the sign-in exchange (or the returnTo carrying the token)' },
        401: { description: 'Response refused (reason in the body)' },
        403: { description: 'User deactivated' },
        429: { description: 'Too many callbacks from this client address (retry-after); not read, not counted' },
        503: { description: 'SAML_BUSY: too many responses waiting to be verified (retry-after)' },
      },
      handler: async ({ params, body, request, reply }) => reply.redirect(await finishSamlLogin(ctx, saml, params.employerId, body.SAMLResponse, request, reply), 302),
    });

    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/auth/saml/metadata/:employerId',
      summary: 'SAML service-provider metadata',
      tags: ['SSO'],
      auth: { public: true },
      params: employerParams,
      responses: { 200: { description: 'SP metadata', schema: z.string(), contentType: 'application/samlmetadata+xml' }, 404: { description: 'Unknown employer' } },
      handler: async ({ params, reply }) => {
        const { settings } = await getSsoConfiguration(ctx.db.slonik, params.employerId);
        const { spEntityId, acsUrl } = serviceProviderUrls(ctx, params.employerId);
        return reply.type('application/samlmetadata+xml').send(generateSpMetadata({ spEntityId, acsUrl, nameIdFormat: spNameIdFormat(settings) }));
      },
    });
  };
}
