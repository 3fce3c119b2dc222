// Changing an employer's SSO configuration: metadata fetched and merged, the aggregate decides, and
// a newly issued SCIM token is handed back to the caller (once; only its hash was recorded). SAML
// trust changes of a caller who may not make them directly wait as a pending change, which an
// administrator confirms or anyone allowed to configure SSO discards (sso-configuration.ts).
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../app-context.ts';
import { employerOf, handleCommand, type CommandContext } from '../event-store/command-handler.ts';
import { DomainError } from '../event-store/decider.ts';
import { getSsoConfiguration } from '../../projections/sso/queries.ts';
import { fetchIdpMetadata, type MetadataFetchOptions } from './idp-metadata.ts';
import type { MetadataReading } from './saml-certificates.ts';
import { newSpKey } from './saml-sp-keys.ts';
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
      Object.assign(changes, { samlEntryPoint: metadata.entryPoint, samlCertificates: metadata.certificates, samlIssuer: metadata.issuer, samlLogoutUrl: metadata.logoutUrl });
    }
  }
  // Absent fields are absent from the parsed body (JSON has no undefined), so they change nothing.
  const { samlMetadataUrl: _url, samlCertificate, rotateScimToken: _rotate, ...plainFields } = input;
  Object.assign(changes, plainFields);
  if (samlCertificate !== undefined) changes.samlCertificates = samlCertificate ?? [];
  return changes;
}

/**
 * `trustChanges`: `apply` for an administrator's session, `propose` for an API key. Returns the SCIM
 * token if this update issued one, and the id of the trust change it left pending, if any. A token
 * it replaces keeps working DEFAULT_SCIM_TOKEN_OVERLAP_SECONDS.
 */
export async function updateSsoConfiguration(
  ctx: AppContext,
  context: CommandContext,
  input: { update: SsoConfigurationUpdate; metadataFetch: MetadataFetchOptions; trustChanges: 'apply' | 'propose' },
): Promise<{ scimBearerToken: string | null; proposedTrustChangeId: string | null }> {
  return decideUpdate(ctx, context, {
    changes: await settingChanges(input.update, input.metadataFetch),
    rotateScimToken: input.update.rotateScimToken ?? false,
    trustChanges: input.trustChanges,
    scimTokenOverlapSeconds: DEFAULT_SCIM_TOKEN_OVERLAP_SECONDS,
  });
}

/** How long a replaced SCIM token keeps working unless the caller chooses: 1 h (the IdP administrator's time to paste the new one). */
export const DEFAULT_SCIM_TOKEN_OVERLAP_SECONDS = 3600;

/** Rotates the SCIM token (SCIM must be on); the old one works for `overlapSeconds` more. Returns the new token (shown once). */
export async function rotateScimToken(ctx: AppContext, context: CommandContext, input: { overlapSeconds: number }): Promise<string> {
  const { scimBearerToken } = await decideUpdate(ctx, context, { changes: {}, rotateScimToken: true, trustChanges: 'apply', scimTokenOverlapSeconds: input.overlapSeconds });
  if (scimBearerToken === null) throw new Error('unreachable: a rotation with SCIM enabled issues a token');
  return scimBearerToken;
}

async function decideUpdate(
  ctx: AppContext,
  context: CommandContext,
  input: { changes: Partial<SsoSettings>; rotateScimToken: boolean; trustChanges: 'apply' | 'propose'; scimTokenOverlapSeconds: number },
): Promise<{ scimBearerToken: string | null; proposedTrustChangeId: string | null }> {
  const employerId = employerOf(context);
  const candidate = newScimToken();
  const changeId = randomUUID();
  // The employer's first SP key pair comes with its first save; generating one costs tens of milliseconds, so only when none shows.
  const { spKeys } = await getSsoConfiguration(ctx.db.slonik, employerId);
  const candidateSpKey = spKeys.length === 0 ? await newSpKey(employerId, ctx.encryptionKey, new Date()) : null;
  const now = Date.now();
  const { newEvents } = await handleCommand(ctx.commands, {
    streamName: ssoConfigurationStream(employerId),
    decider: ssoConfigurationDecider,
    command: {
      type: 'UpdateSsoConfiguration',
      employerId,
      changes: input.changes,
      rotateScimToken: input.rotateScimToken,
      candidateScimToken: { tokenId: candidate.tokenId, tokenHash: candidate.tokenHash },
      candidateSpKey,
      trust: input.trustChanges === 'apply' ? { mode: 'apply' } : { mode: 'propose', changeId },
      scimTokenOverlapEndsAt: input.scimTokenOverlapSeconds === 0 ? null : new Date(now + input.scimTokenOverlapSeconds * 1000).toISOString(),
      now: new Date(now).toISOString(),
    },
    context,
  });
  const issued = newEvents.some((event) => event.type === 'SsoConfigurationUpdated' && event.data.issuedScimToken?.tokenId === candidate.tokenId);
  const proposed = newEvents.some((event) => event.type === 'SsoTrustChangeProposed' && event.data.changeId === changeId);
  return { scimBearerToken: issued ? candidate.token : null, proposedTrustChangeId: proposed ? changeId : null };
}

/** The replaced SCIM token stops working now; nothing to do when none works. */
export async function endScimTokenOverlap(ctx: AppContext, context: CommandContext): Promise<void> {
  const employerId = employerOf(context);
  await handleCommand(ctx.commands, {
    streamName: ssoConfigurationStream(employerId),
    decider: ssoConfigurationDecider,
    command: { type: 'EndScimTokenOverlap', employerId, now: new Date().toISOString() },
    context,
  });
}

/** An administrator, in a session, puts the pending trust change `changeId` in effect (404 unless it is the pending one). */
export async function confirmSsoTrustChange(ctx: AppContext, context: CommandContext, input: { changeId: string }): Promise<void> {
  await decideTrustChange(ctx, context, 'ConfirmSsoTrustChange', input.changeId);
}

/** Drops the pending trust change `changeId` (404 unless it is the pending one); nothing in effect changes. */
export async function discardSsoTrustChange(ctx: AppContext, context: CommandContext, input: { changeId: string }): Promise<void> {
  await decideTrustChange(ctx, context, 'DiscardSsoTrustChange', input.changeId);
}

async function decideTrustChange(ctx: AppContext, context: CommandContext, type: 'ConfirmSsoTrustChange' | 'DiscardSsoTrustChange', changeId: string): Promise<void> {
  const employerId = employerOf(context);
  await handleCommand(ctx.commands, { streamName: ssoConfigurationStream(employerId), decider: ssoConfigurationDecider, command: { type, employerId, changeId }, context });
}

/**
 * Reads the IdP metadata at the employer's metadata URL in effect and records what changed, or the
 * failure (the last good metadata stays in effect). By the daily job (a system actor) or an
 * administrator; 400 SAML_METADATA_URL_NOT_SET when the configuration follows no metadata URL.
 */
export async function refreshSamlMetadata(ctx: AppContext, context: CommandContext, input: { metadataUrl: string | null; metadataFetch: MetadataFetchOptions; now: Date }): Promise<void> {
  const employerId = employerOf(context);
  const { metadataUrl } = input;
  if (metadataUrl === null) throw new DomainError('invalid', 'SAML_METADATA_URL_NOT_SET', 'The SSO configuration has no samlMetadataUrl to refresh from; set one with POST /api/employer/sso.');
  let reading: MetadataReading;
  try {
    reading = { metadata: await fetchIdpMetadata(metadataUrl, input.metadataFetch) };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    reading = { failure: { code: error.code, message: error.message } };
  }
  await handleCommand(ctx.commands, {
    streamName: ssoConfigurationStream(employerId),
    decider: ssoConfigurationDecider,
    command: { type: 'RefreshSamlMetadata', employerId, metadataUrl, reading, now: input.now.toISOString() },
    context,
  });
}

/** Records a warning when the last valid IdP signing certificate has reached a threshold (30, 7, 1 days) not warned of yet. */
export async function warnOfCertificateExpiry(ctx: AppContext, context: CommandContext, input: { now: Date }): Promise<void> {
  const employerId = employerOf(context);
  await handleCommand(ctx.commands, { streamName: ssoConfigurationStream(employerId), decider: ssoConfigurationDecider, command: { type: 'WarnOfCertificateExpiry', employerId, now: input.now.toISOString() }, context });
}

/** An administrator's refresh from the console: the metadata URL in effect, read now. */
export async function refreshSamlMetadataNow(ctx: AppContext, context: CommandContext, metadataFetch: MetadataFetchOptions): Promise<void> {
  const { settings } = await getSsoConfiguration(ctx.db.slonik, employerOf(context));
  await refreshSamlMetadata(ctx, context, { metadataUrl: settings.samlMetadataUrl, metadataFetch, now: new Date() });
}

/** A new SP key pair, published at once; the keys in use keep signing and decrypting for `overlapHours`. */
export async function rotateSamlSpKey(ctx: AppContext, context: CommandContext, input: { overlapHours: number }): Promise<void> {
  const employerId = employerOf(context);
  const key = await newSpKey(employerId, ctx.encryptionKey, new Date());
  await handleCommand(ctx.commands, { streamName: ssoConfigurationStream(employerId), decider: ssoConfigurationDecider, command: { type: 'RotateSamlSpKey', employerId, key, overlapMs: input.overlapHours * 3600_000 }, context });
}
