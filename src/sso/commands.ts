// Changing an employer's SSO configuration: metadata fetched and merged, the aggregate decides, and
// a newly issued SCIM token is handed back to the caller (once; only its hash was recorded).
import type { AppContext } from '../app-context.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { fetchIdpMetadata, type MetadataFetchOptions } from './idp-metadata.ts';
import { newScimToken } from './scim-token.ts';
import type { SsoConfigurationUpdate } from './settings-input.ts';
import type { SsoSettings } from './events.ts';
import { ssoConfigurationDecider, ssoConfigurationStream } from './sso-configuration.ts';

/** Turns the validated request body into setting changes; fields sent explicitly win over fetched metadata. */
async function settingChanges(input: SsoConfigurationUpdate, metadataFetch: MetadataFetchOptions): Promise<Partial<SsoSettings>> {
  const changes: Partial<SsoSettings> = {};
  if (input.samlMetadataUrl !== undefined) {
    changes.samlMetadataUrl = input.samlMetadataUrl;
    if (input.samlMetadataUrl !== null) {
      const metadata = await fetchIdpMetadata(input.samlMetadataUrl, metadataFetch);
      Object.assign(changes, { samlEntryPoint: metadata.entryPoint, samlCertificates: metadata.certificates, samlIssuer: metadata.issuer });
    }
  }
  // Absent fields are absent from the parsed body (JSON has no undefined), so they change nothing.
  const { samlMetadataUrl: _url, samlCertificate, rotateScimToken: _rotate, ...plainFields } = input;
  Object.assign(changes, plainFields);
  if (samlCertificate !== undefined) changes.samlCertificates = samlCertificate ?? [];
  return changes;
}

export async function updateSsoConfiguration(
  ctx: AppContext,
  context: CommandContext,
  input: { update: SsoConfigurationUpdate; metadataFetch: MetadataFetchOptions },
): Promise<{ scimBearerToken: string | null }> {
  const { update, metadataFetch } = input;
  const employerId = employerOf(context);
  const candidate = newScimToken();
  const { newEvents } = await handleCommand(ctx.commands, {
    streamName: ssoConfigurationStream(employerId),
    decider: ssoConfigurationDecider,
    command: {
      type: 'UpdateSsoConfiguration',
      employerId,
      changes: await settingChanges(update, metadataFetch),
      rotateScimToken: update.rotateScimToken ?? false,
      candidateScimToken: { tokenId: candidate.tokenId, tokenHash: candidate.tokenHash },
      now: new Date().toISOString(),
    },
    context,
  });
  const issued = newEvents.some((event) => event.data.issuedScimToken?.tokenId === candidate.tokenId);
  return { scimBearerToken: issued ? candidate.token : null };
}
