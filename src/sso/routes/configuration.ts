// The employer's SSO configuration (GET, POST /api/employer/sso): SAML settings, SCIM on or off and its
// token, and what the IdP administrator needs. SAML trust changes an API key makes are only proposed
// (./trust-changes.ts confirms or discards them).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../app-context.ts';
import { commandContextOf, type Principal } from '../../auth/principal.ts';
import { defineRoute } from '../../http/route.ts';
import type { RoutePlugin } from '../../http/server.ts';
import { getSsoConfiguration, type PendingTrustChangeView, type SsoConfigurationView } from '../../../projections/sso/queries.ts';
import { updateSsoConfiguration } from '../commands.ts';
import { CERTIFICATE_EXPIRY_WARNING_DAYS, SAML_TRUST_SETTINGS } from '../events.ts';
import { expiryWarningDays, lastValidCertificate } from '../saml-certificates.ts';
import { spKeysInUse } from '../saml-sp-keys.ts';
import { serviceProviderUrls, spNameIdFormat } from '../saml-flow.ts';
import { metadataFetchOptionsOf } from '../idp-metadata.ts';
import { describeCertificate, ssoConfigurationUpdateSchema } from '../settings-input.ts';

const SCIM_BASE_PATH = '/api/scim/v2';

const certificateDescription = z.object({ subject: z.string(), fingerprintSha256: z.string(), validTo: z.string().meta({ description: 'When the certificate expires.' }) });
const certificateDescriptions = z.array(certificateDescription);

const metadataRefreshResponse = z.object({
  retiringCertificates: z
    .array(certificateDescription.extend({ trustedUntil: z.string() }))
    .meta({ description: 'Certificates the IdP metadata no longer lists, still trusted until trustedUntil (a grace period of 24 h).' }),
  refreshedAt: z.string().nullable().meta({ description: 'When a refresh last changed what is trusted (or succeeded after failing).' }),
  failure: z
    .object({ at: z.string(), code: z.string(), message: z.string() })
    .nullable()
    .meta({ description: 'The last refresh failed: SAML keeps trusting the last good metadata until one succeeds.' }),
});

const certificateExpiryResponse = certificateDescription
  .extend({ warningDays: z.literal([...CERTIFICATE_EXPIRY_WARNING_DAYS]).nullable().meta({ description: 'The nearest warning threshold reached (30, 7, 1 days before validTo), or null.' }) })
  .meta({ description: 'The IdP signing certificate that expires last: when it expires SAML sign-in stops.' });

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
        samlIdpInitiatedLogin: z.boolean(),
      })
      .partial()
      .meta({ description: 'The values it would put in effect; settings it leaves as they are are absent.' }),
  });

export const ssoConfigurationResponse = z
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
    samlLogoutUrl: z.string().nullable(),
    samlSignAuthnRequests: z.boolean(),
    samlIdpInitiatedLogin: z.boolean(),
    spKeys: z
      .array(z.object({ keyId: z.string(), fingerprintSha256: z.string(), validTo: z.string(), issuedAt: z.string(), retiresAt: z.string().nullable(), signing: z.boolean() }))
      .meta({ description: "The service's SP key pairs in use, oldest first, all published in the SP metadata (signing and encryption). `signing`: the one AuthnRequests are signed with; a replaced key signs and decrypts until retiresAt." }),
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
    samlMetadataRefresh: metadataRefreshResponse.meta({ description: 'The IdP metadata read again daily (and on demand) from samlMetadataUrl.' }),
    samlCertificateExpiry: certificateExpiryResponse.nullable(),
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
    spKeys: spKeysInUse(view.spKeys, new Date()).map((key, index) => {
      const { fingerprintSha256, validTo } = describeCertificate(key.certificate);
      return { keyId: key.keyId, fingerprintSha256, validTo, issuedAt: key.issuedAt, retiresAt: key.retiresAt, signing: index === 0 };
    }),
    scimTokenExists: view.scimTokenExists,
    scimTokenRotatedAt: view.scimTokenRotatedAt,
    spEntityId,
    acsUrl,
    spMetadataUrl,
    spNameIdFormat: spNameIdFormat(view.settings),
    scimBaseUrl: `${ctx.config.PUBLIC_BASE_URL}${SCIM_BASE_PATH}`,
    updatedAt: view.updatedAt,
    pendingTrustChange: view.pendingTrustChange && presentPendingTrustChange(view.pendingTrustChange),
    samlMetadataRefresh: {
      ...view.metadataRefresh,
      retiringCertificates: view.metadataRefresh.retiringCertificates.map((entry) => ({ ...describeCertificate(entry.certificate), trustedUntil: entry.trustedUntil })),
    },
    samlCertificateExpiry: presentExpiry(samlCertificates, new Date()),
  };
}

function presentExpiry(certificates: string[], now: Date): z.infer<typeof certificateExpiryResponse> | null {
  const last = lastValidCertificate(certificates);
  return last && { ...last, warningDays: expiryWarningDays(last.validTo, now) };
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

/** The employer's configuration as GET /api/employer/sso answers it. */
export async function configurationOf(ctx: AppContext, principal: Principal): Promise<z.infer<typeof ssoConfigurationResponse>> {
  return presentConfiguration(ctx, principal.employerId, await getSsoConfiguration(ctx.db.slonik, principal.employerId));
}

/** Trust settings read as the request body names them. */
const TRUST_FIELDS = SAML_TRUST_SETTINGS.map((setting) => (setting === 'samlCertificates' ? 'samlCertificate' : setting)).join(', ');

export const SSO_AUTH = { modes: ['session', 'apiKey'], scope: 'sso:manage' } as const;

export function ssoConfigurationRoutes(options: { idpMetadataCa?: string }): RoutePlugin {
  return async function ssoConfigurationRoutesPlugin(fastify: FastifyInstance, { ctx }: { ctx: AppContext }) {
    defineRoute(fastify, ctx, {
      method: 'GET',
      url: '/api/employer/sso',
      summary: 'The SSO configuration and what the IdP administrator needs',
      description: 'Never returns the SCIM token, only whether one exists and when it was issued. `pendingTrustChange` is a SAML trust change an API key proposed, not in effect until an administrator confirms it.',
      tags: ['SSO'],
      auth: SSO_AUTH,
      responses: { 200: { description: 'The configuration', schema: ssoConfigurationResponse } },
      handler: async ({ principal }) => configurationOf(ctx, principal),
    });

    defineRoute(fastify, ctx, {
      method: 'POST',
      url: '/api/employer/sso',
      summary: 'Update the SSO configuration (partial)',
      description:
        'Absent fields keep their values. samlMetadataUrl is fetched now and fills entry point, certificate(s) and issuer. ' +
        'samlEnabled: true needs entry point, certificate and issuer. scimEnabled: true (first time) or rotateScimToken: true returns scimBearerToken once; disabling SCIM revokes it. ' +
        'A rotation keeps the replaced token working for 1 h (POST /api/employer/sso/scim-token/rotate chooses the overlap, .../end-overlap ends it).\n\n' +
        `**SAML trust.** ${TRUST_FIELDS} decide whom a SAML response signs in, administrators included. ` +
        "An administrator's session changes them at once (200). With an API key they are not applied: they become the employer's pending trust change " +
        '(`pendingTrustChange`, answered 202), which takes effect only when an administrator confirms it in a browser session ' +
        '(POST /api/employer/sso/trust-changes/{changeId}/confirm); until then SAML signs in as before. A later proposal replaces the pending one (keeping the values it does not name) under a new id. ' +
        "samlEnabled: false applies at once with a key too (it only takes trust away); the other fields always apply at once. Every trust change (proposed, confirmed, discarded, or made directly) is audited and e-mailed to the employer's administrators.\n\n" +
        '**SCIM token.** Issuing and rotating it is within sso:manage ("Manage SSO and SCIM configuration"): the token provisions PATIENT users (administrators only through groups an administrator mapped to the role in a session: /api/employer/admin-role-mapping) and signs no one in, ' +
        "and it never changes an administrator's userName or sign-in e-mail (400 mutability; it may deactivate one, not the last (409), which revokes the keys that administrator created).",
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
          metadataFetch: metadataFetchOptionsOf(ctx.config, options.idpMetadataCa),
          // Only an administrator's session may already sign in as anyone the new trust could sign in.
          trustChanges: principal.kind === 'session' ? 'apply' : 'propose',
        });
        const configuration = await configurationOf(ctx, principal);
        if (proposedTrustChangeId) reply.status(202);
        return scimBearerToken ? { ...configuration, scimBearerToken } : configuration;
      },
    });
  };
}
