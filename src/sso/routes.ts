// HTTP endpoints of SSO: the employer's configuration (GET, POST /api/employer/sso) and the SAML
// service-provider endpoints (start, assertion consumer, metadata), which are public: the browser
// arrives there before it has a session, and the callback authenticates by the signed response.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../app-context.ts';
import { commandContextOf } from '../auth/principal.ts';
import type { RoutePlugin } from '../http/server.ts';
import { defineRoute } from '../http/route.ts';
import { ID_MAX, SAML_CALLBACK_BODY_LIMIT_BYTES, SAML_RESPONSE_MAX, URL_MAX } from '../http/limits.ts';
import { assertAllowed, clientAddressKey, createTokenBuckets, type TokenBucketLimit } from '../http/token-buckets.ts';
import { DomainError } from '../event-store/decider.ts';
import { updateSsoConfiguration } from './commands.ts';
import { getSsoConfiguration, type SsoConfigurationView } from '../../projections/sso/queries.ts';
import { generateSpMetadata } from './saml.ts';
import { finishSamlLogin, serviceProviderUrls, spNameIdFormat, startSamlLogin } from './saml-flow.ts';
import { describeCertificate, ssoConfigurationUpdateSchema } from './settings-input.ts';

export const SCIM_BASE_PATH = '/api/scim/v2';

const ssoConfigurationResponse = z
  .object({
    samlEnabled: z.boolean(),
    samlMetadataUrl: z.string().nullable(),
    samlEntryPoint: z.string().nullable(),
    samlCertificate: z.string().nullable().meta({ description: 'The IdP signing certificate(s) as PEM.' }),
    samlCertificates: z.array(z.object({ subject: z.string(), fingerprintSha256: z.string(), validTo: z.string() })),
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
  };
}

const employerParams = z.object({ employerId: z.string().max(ID_MAX).regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be an employer id') });
const SSO_AUTH = { modes: ['session', 'apiKey'], scope: 'sso:manage' } as const;

/**
 * Refused SAML callbacks per client address: each one is audited (an event), so a flood of junk posts
 * is cut off before validation once an address has used its allowance. Browsers behind one corporate
 * address rarely fail a login; 5 a second with bursts of 50, per process, as for SCIM's failed
 * authentications.
 */
export const DEFAULT_SAML_CALLBACK_FAILURE_LIMIT: TokenBucketLimit = { perSecond: 5, burst: 50 };

export function ssoRoutes(options: { idpMetadataCa?: string; callbackFailureLimit?: TokenBucketLimit }): RoutePlugin {
  return async function registerSsoRoutes(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    const callbackFailures = createTokenBuckets(options.callbackFailureLimit ?? DEFAULT_SAML_CALLBACK_FAILURE_LIMIT);
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/sso',
      summary: 'The SSO configuration and what the IdP administrator needs',
      description: 'Never returns the SCIM token, only whether one exists and when it was issued.',
      tags: ['SSO'],
      auth: SSO_AUTH,
      responses: { 200: { description: 'The configuration', schema: ssoConfigurationResponse } },
      handler: async ({ principal }) => presentConfiguration(ctx, principal.employerId, await getSsoConfiguration(ctx.db.slonik, principal.employerId)),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/sso',
      summary: 'Update the SSO configuration (partial)',
      description:
        'Absent fields keep their values. samlMetadataUrl is fetched now and fills entry point, certificate(s) and issuer. ' +
        'samlEnabled: true needs entry point, certificate and issuer. scimEnabled: true (first time) or rotateScimToken: true returns scimBearerToken once; disabling SCIM revokes it.',
      tags: ['SSO'],
      auth: SSO_AUTH,
      body: ssoConfigurationUpdateSchema,
      responses: { 200: { description: 'The configuration after the update', schema: ssoUpdateResponse } },
      handler: async ({ principal, body, request, reply }) => {
        reply.header('cache-control', 'no-store'); // may carry the SCIM token
        const { scimBearerToken } = await updateSsoConfiguration(ctx, commandContextOf(principal, request.id), {
          update: body,
          metadataFetch: { allowPrivateNetworks: ctx.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, ...(options.idpMetadataCa ? { ca: options.idpMetadataCa } : {}) },
        });
        const configuration = presentConfiguration(ctx, principal.employerId, await getSsoConfiguration(ctx.db.slonik, principal.employerId));
        return scimBearerToken ? { ...configuration, scimBearerToken } : configuration;
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
      handler: async ({ params, query, reply }) => reply.redirect(await startSamlLogin(ctx, params.employerId, query.returnTo), 302),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/auth/saml/callback/:employerId',
      summary: 'SAML assertion consumer service (HTTP-POST binding)',
      description: 'Validates the response, resolves or provisions the user, and redirects with a one-time sign-in token. Refusals are 4xx with `reason` and are audited; a client address (an IPv6 address by its /64) with too many refusals (5/s, bursts of 50) gets 429 before validation.',
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
        429: { description: 'Too many refused callbacks from this client address (retry-after); not validated, not audited' },
      },
      handler: async ({ params, body, request, reply }) => {
        const client = clientAddressKey(request.ip);
        assertAllowed(callbackFailures.peek(client), reply, 'Too many refused SAML responses from this address');
        try {
          return reply.redirect(await finishSamlLogin(ctx, params.employerId, body.SAMLResponse, request.ip), 302);
        } catch (error) {
          if (error instanceof DomainError && error.status < 500) callbackFailures.take(client);
          throw error;
        }
      },
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
