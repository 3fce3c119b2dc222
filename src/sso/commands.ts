// Changing an employer's SSO configuration: metadata fetched and merged, the aggregate decides, and
// a newly issued SCIM token is handed back to the caller (once; only its hash was recorded). SAML
// trust changes of a caller who may not make them directly wait as a pending change, which an
// administrator confirms or anyone allowed to configure SSO discards (sso-configuration.ts).
import { randomUUID } from 'node:crypto';
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
