// The SAML service-provider endpoints (start, assertion consumer, metadata). They are public: the
// browser arrives there before it has a session, and the callback authenticates by the signed response.
import { z } from 'zod';
import { routesUsing } from '../../capability.ts';
import {
  ID_MAX, SAML_CALLBACK_BODY_LIMIT_BYTES, SAML_RESPONSE_MAX, SAML_RESPONSE_XML_MAX_BYTES, SAML_XML_ATTRIBUTES_MAX, SAML_XML_DEPTH_MAX, SAML_XML_ELEMENTS_MAX, URL_MAX,
} from '../../http/limits.ts';
import { defineRoute } from '../../http/route.ts';
import { getSsoConfiguration } from '../../../projections/sso/queries.ts';
import { generateSpMetadata } from '../saml.ts';
import { SESSION_COOKIE } from '../../auth/authenticate.ts';
import { commandContextOf } from '../../auth/principal.ts';
import { admitSamlCallback, finishIdpLogout, finishSamlLogin, serviceProviderUrls, spNameIdFormat, startSamlLogin, startSamlLogout, type SamlRuntime } from '../saml-flow.ts';
import { spKeysInUse } from '../saml-sp-keys.ts';
import { PER_CLIENT_WAITING_MAX, WAITING_MAX } from '../saml-verifier.ts';

const employerParams = z.object({ employerId: z.string().max(ID_MAX).regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be an employer id') });

const SAML_CALLBACK_URL = '/api/auth/saml/callback/:employerId';
/** A deflated LogoutRequest or its signature in a URL: a few KiB at most. */
const SAML_LOGOUT_MESSAGE_MAX = 8192;

/** `services`: this process's SAML runtime (verifier threads, refusal counts, per-address limit). */
export const samlRoutes = routesUsing<SamlRuntime>(async function samlRoutes(fastify, { ctx, services: saml }) {
  // The callback's limit is spent before its body is read or parsed (src/sso/saml-flow.ts).
  fastify.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.url === SAML_CALLBACK_URL) admitSamlCallback(saml, request, reply);
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
      'Validates the response, resolves or provisions the user, and redirects with a one-time sign-in token. ' +
      'An unsolicited (IdP-initiated) response is accepted only when the employer turned samlIdpInitiatedLogin on, with the same audience, recipient, time and one-time-use checks, and audited as auth.saml.login_idp_initiated. Refusals are 4xx with `reason`; ' +
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
      RelayState: z.string().max(URL_MAX).optional().meta({ description: 'SP-initiated: ignored (returnTo is kept server-side with the request). IdP-initiated: where the browser lands, if it passes the returnTo allowlist; else the console.' }),
    }),
    responses: {
      302: { description: 'To the sign-in exchange (or the returnTo carrying the token)' },
      401: { description: 'Response refused (reason in the body)' },
      403: { description: 'User deactivated' },
      429: { description: 'Too many callbacks from this client address (retry-after); not read, not counted' },
      503: { description: 'SAML_BUSY: too many responses waiting to be verified (retry-after)' },
    },
    handler: async ({ params, body, request, reply }) => reply.redirect(await finishSamlLogin(ctx, saml, params.employerId, body.SAMLResponse, body.RelayState, request, reply), 302),
  });

  defineRoute(fastify, ctx, {
    method: 'GET',
    url: '/api/auth/saml/logout/:employerId',
    summary: 'SAML Single Logout service (HTTP-Redirect binding)',
    description:
      "The IdP's LogoutRequest, signed with RSA-SHA256 (unsigned ones are refused), ends every session here of the user its NameID names and is answered, once, " +
      'with a LogoutResponse signed with the SP key (a replayed request is refused). A LogoutResponse to a sign-out started here sends the browser to the console.',
    tags: ['SSO'],
    auth: { public: true },
    params: employerParams,
    querystring: z.object({
      SAMLRequest: z.string().max(SAML_LOGOUT_MESSAGE_MAX).optional(),
      SAMLResponse: z.string().max(SAML_LOGOUT_MESSAGE_MAX).optional(),
      RelayState: z.string().max(URL_MAX).optional(),
      SigAlg: z.string().max(URL_MAX).optional(),
      Signature: z.string().max(SAML_LOGOUT_MESSAGE_MAX).optional(),
    }),
    responses: { 302: { description: 'To the IdP with the LogoutResponse, or to the console' }, 400: { description: 'SAML not enabled, or no SP key to sign the answer' }, 401: { description: 'SAML_LOGOUT_REJECTED (reason in the body)' } },
    handler: async ({ params, query, request, reply }) => {
      const rawQuery = request.url.slice(request.url.indexOf('?') + 1);
      return reply.redirect(await finishIdpLogout(ctx, params.employerId, query as Record<string, string>, rawQuery), 302);
    },
  });

  defineRoute(fastify, ctx, {
    method: 'POST',
    url: '/api/auth/saml/logout',
    summary: 'Sign out here and at the IdP (SP-initiated Single Logout)',
    description:
      'Ends the current session first, then, when SAML is on with an IdP Single Logout URL (samlLogoutUrl) and the employer has an SP key, answers the URL ' +
      'the browser goes to next: the IdP, carrying a LogoutRequest signed with the SP key. Otherwise redirectUrl is null.',
    tags: ['SSO'],
    auth: { modes: ['session'] },
    responses: { 200: { description: 'Signed out here', schema: z.object({ redirectUrl: z.string().nullable() }) } },
    handler: async ({ principal, request, reply }) => {
      if (principal.kind !== 'session') throw new Error('unreachable: session-only route');
      const redirectUrl = await startSamlLogout(ctx, commandContextOf(principal, request.id), principal);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { redirectUrl };
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
      const { settings, spKeys } = await getSsoConfiguration(ctx.db.slonik, params.employerId);
      const { spEntityId, acsUrl, singleLogoutUrl } = serviceProviderUrls(ctx, params.employerId);
      const certificates = spKeysInUse(spKeys, new Date()).map((key) => key.certificate);
      const metadata = generateSpMetadata({ spEntityId, acsUrl, singleLogoutUrl, nameIdFormat: spNameIdFormat(settings), certificates, authnRequestsSigned: settings.samlSignAuthnRequests && certificates.length > 0 });
      return reply.type('application/samlmetadata+xml').header('content-disposition', `attachment; filename="sp-metadata-${params.employerId}.xml"`).send(metadata);
    },
  });
});
