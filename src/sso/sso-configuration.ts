// The employer's SSO configuration aggregate: stream tenant-<employerId>.sso-<employerId>. SAML settings
// and the SCIM switch are a partial update; the SCIM bearer token is issued when SCIM is first enabled
// or on rotation, revoked on rotation or when SCIM is disabled; a rotation keeps the token it replaced
// working for an overlap (ScimTokenOverlapStarted). Only the tokens' SHA-256 hashes are kept.
//
// SAML trust (SAML_TRUST_SETTINGS: whom a SAML response signs in) changes at once only for a caller
// who may sign in as anyone already: an administrator's session. An API key's trust changes are
// proposed instead: one pending change per employer (a later proposal replaces it, keeping its values
// the later one does not name), in effect only once an administrator confirms it by its id. Turning
// SAML off takes trust away, and applies at once whoever asks.
//
// The IdP's metadata read again and the certificate expiry warnings are decided in saml-certificates.ts.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import {
  DEFAULT_SSO_SETTINGS,
  SAML_TRUST_SETTINGS,
  type RetiringCertificate,
  type SamlTrustChanges,
  type SpKeyRecord,
  type SamlTrustSetting,
  type ScimTokenRecord,
  type SsoConfigurationEvent,
  type SsoSettings,
} from './events.ts';
import { keysAfterIssue } from './saml-sp-keys.ts';
import { decideExpiryWarning, decideMetadataRefresh, type MetadataReading } from './saml-certificates.ts';

export type UpdateSsoConfiguration = {
  type: 'UpdateSsoConfiguration';
  employerId: string;
  changes: Partial<SsoSettings>;
  rotateScimToken: boolean;
  /** A fresh token's id and hash, used only if this command issues a token (decide stays pure). */
  candidateScimToken: { tokenId: string; tokenHash: string };
  /** A fresh SP key pair, issued if the employer has none yet (null when the read model showed one). */
  candidateSpKey: SpKeyRecord | null;
  /** `apply`: trust changes take effect (an admin's session); `propose`: they wait, as change `changeId` (an API key). */
  trust: { mode: 'apply' } | { mode: 'propose'; changeId: string };
  /** Until when a token this command replaces keeps working; null: it stops at once. */
  scimTokenOverlapEndsAt: string | null;
  now: string;
};
export type EndScimTokenOverlap = { type: 'EndScimTokenOverlap'; employerId: string; now: string };
export type ConfirmSsoTrustChange = { type: 'ConfirmSsoTrustChange'; employerId: string; changeId: string };
export type DiscardSsoTrustChange = { type: 'DiscardSsoTrustChange'; employerId: string; changeId: string };
/** `reading`: what fetching `metadataUrl` (the URL in effect when it was read) gave. */
export type RefreshSamlMetadata = { type: 'RefreshSamlMetadata'; employerId: string; metadataUrl: string; reading: MetadataReading; now: string };
/** A new SP key pair; the keys in use now keep working for `overlapMs` (0: replaced at once). */
export type RotateSamlSpKey = { type: 'RotateSamlSpKey'; employerId: string; key: SpKeyRecord; overlapMs: number };
export type WarnOfCertificateExpiry = { type: 'WarnOfCertificateExpiry'; employerId: string; now: string };
export type SsoConfigurationCommand =
  | UpdateSsoConfiguration | ConfirmSsoTrustChange | DiscardSsoTrustChange | RefreshSamlMetadata | WarnOfCertificateExpiry | RotateSamlSpKey | EndScimTokenOverlap;

export type PendingTrustChange = { changeId: string; changes: SamlTrustChanges };
/** The token a rotation replaced, working until endsAt. */
export type PreviousScimToken = { tokenId: string; endsAt: string };
export type SsoConfigurationState = {
  settings: SsoSettings;
  scimToken: ScimTokenRecord | null;
  previousScimToken: PreviousScimToken | null;
  pendingTrustChange: PendingTrustChange | null;
  /** Certificates the IdP's metadata stopped listing, trusted until their grace period ends. */
  retiringCertificates: RetiringCertificate[];
  refreshFailing: boolean;
  expiryWarnings: string[];
  spKeys: SpKeyRecord[];
};

/** Settings set directly (a save, a confirmed change): certificates set so replace the retiring ones, a new metadata URL clears its failure. */
function withSettings(state: SsoConfigurationState, changes: Partial<SsoSettings>): SsoConfigurationState {
  return {
    ...state,
    settings: { ...state.settings, ...changes },
    retiringCertificates: changes.samlCertificates === undefined ? state.retiringCertificates : [],
    refreshFailing: changes.samlMetadataUrl === undefined ? state.refreshFailing : false,
  };
}

/** The replaced token, if it still works at `now`. */
function previousTokenAt(state: SsoConfigurationState, now: string): PreviousScimToken | null {
  const previous = state.previousScimToken;
  return previous && Date.parse(previous.endsAt) > Date.parse(now) ? previous : null;
}

const isTrustSetting = (key: string): key is SamlTrustSetting => (SAML_TRUST_SETTINGS as readonly string[]).includes(key);

function changedSettings<T extends Partial<SsoSettings>>(before: SsoSettings, after: SsoSettings, keys: ReadonlyArray<keyof SsoSettings> = Object.keys(after) as Array<keyof SsoSettings>): T {
  return Object.fromEntries(keys.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key])).map((key) => [key, after[key]])) as T;
}

/** The SAML trust settings among `changes`. */
export function trustChangesOf(changes: Partial<SsoSettings>): SamlTrustChanges {
  return Object.fromEntries(Object.entries(changes).filter(([key]) => isTrustSetting(key))) as SamlTrustChanges;
}

function splitTrust(changes: Partial<SsoSettings>): { trust: SamlTrustChanges; other: Partial<SsoSettings> } {
  return { trust: trustChangesOf(changes), other: Object.fromEntries(Object.entries(changes).filter(([key]) => !isTrustSetting(key))) };
}

function assertSamlComplete(settings: SsoSettings) {
  if (!settings.samlEnabled) return;
  const missing = [
    settings.samlEntryPoint ? null : 'samlEntryPoint',
    settings.samlCertificates.length > 0 ? null : 'samlCertificate',
    settings.samlIssuer ? null : 'samlIssuer',
  ].filter((field) => field !== null);
  if (missing.length > 0) {
    throw new DomainError('invalid', 'SAML_CONFIGURATION_INCOMPLETE', `SAML cannot be enabled without ${missing.join(', ')} (set them, or samlMetadataUrl, first or in the same request).`, { missing });
  }
}

function assertPending(state: SsoConfigurationState, changeId: string): PendingTrustChange {
  const pending = state.pendingTrustChange;
  if (pending?.changeId !== changeId) {
    throw new DomainError('not_found', 'TRUST_CHANGE_NOT_PENDING', `No pending SAML trust change ${changeId}: it was confirmed, discarded or replaced. GET /api/employer/sso shows the pending one.`);
  }
  return pending;
}

function decideUpdate(command: UpdateSsoConfiguration, state: SsoConfigurationState): SsoConfigurationEvent[] {
  const { trust: requestedTrust, other } = splitTrust(command.changes);
  const proposing = command.trust.mode === 'propose';
  // A key's trust settings wait for an administrator, except turning SAML off.
  const direct = proposing ? { ...other, ...(requestedTrust.samlEnabled === false ? { samlEnabled: false } : {}) } : command.changes;
  const next = { ...state.settings, ...direct };
  assertSamlComplete(next);
  if (command.rotateScimToken && !next.scimEnabled) {
    throw new DomainError('invalid', 'SCIM_NOT_ENABLED', 'rotateScimToken needs SCIM to be enabled (send scimEnabled: true).');
  }
  const events: SsoConfigurationEvent[] = [];
  const changes = changedSettings(state.settings, next);
  const issue = next.scimEnabled && (state.scimToken === null || command.rotateScimToken);
  const revokedScimTokenId = state.scimToken && (!next.scimEnabled || command.rotateScimToken) ? state.scimToken.tokenId : null;
  if (Object.keys(changes).length > 0 || issue || revokedScimTokenId) {
    events.push({
      type: 'SsoConfigurationUpdated',
      data: {
        employerId: command.employerId,
        changes,
        issuedScimToken: issue ? { ...command.candidateScimToken, issuedAt: command.now } : null,
        revokedScimTokenId,
      },
    });
  }
  if (state.spKeys.length === 0 && command.candidateSpKey) events.push({ type: 'SamlSpKeyIssued', data: { employerId: command.employerId, key: command.candidateSpKey, retiring: [] } });
  events.push(...decideScimTokenOverlap(command, state, { replaced: issue ? revokedScimTokenId : null, scimEnabled: next.scimEnabled }));
  if (command.trust.mode === 'propose' && Object.keys(requestedTrust).length > 0) events.push(...decideProposal(command, command.trust.changeId, requestedTrust, next, state.pendingTrustChange));
  return events;
}

/**
 * A token replaced by a rotation keeps working for the overlap asked for (replacing an earlier
 * overlap: at most one replaced token works). Without an overlap, or with SCIM turned off, a
 * replaced token still working stops now.
 */
function decideScimTokenOverlap(command: UpdateSsoConfiguration, state: SsoConfigurationState, outcome: { replaced: string | null; scimEnabled: boolean }): SsoConfigurationEvent[] {
  const { employerId, scimTokenOverlapEndsAt: endsAt } = command;
  if (outcome.replaced && state.scimToken && endsAt !== null) {
    return [{ type: 'ScimTokenOverlapStarted', data: { employerId, tokenId: state.scimToken.tokenId, tokenHash: state.scimToken.tokenHash, endsAt } }];
  }
  const previous = previousTokenAt(state, command.now);
  if (previous && (outcome.replaced || !outcome.scimEnabled)) return [{ type: 'ScimTokenOverlapEnded', data: { employerId, tokenId: previous.tokenId } }];
  return [];
}

/** The pending change after a key's request: the earlier pending values, then the request's, less what is in effect already. */
function decideProposal(command: UpdateSsoConfiguration, changeId: string, requested: SamlTrustChanges, next: SsoSettings, pending: PendingTrustChange | null): SsoConfigurationEvent[] {
  const combined = { ...pending?.changes, ...requested };
  const proposed = changedSettings<SamlTrustChanges>(next, { ...next, ...combined }, SAML_TRUST_SETTINGS);
  if (Object.keys(proposed).length === 0) {
    return pending ? [{ type: 'SsoTrustChangeDiscarded', data: { employerId: command.employerId, changeId: pending.changeId } }] : [];
  }
  if (pending && JSON.stringify(proposed) === JSON.stringify(pending.changes)) return [];
  // Refused now rather than when an administrator confirms it.
  assertSamlComplete({ ...next, ...proposed });
  return [{ type: 'SsoTrustChangeProposed', data: { employerId: command.employerId, changeId, changes: proposed, replacedChangeId: pending?.changeId ?? null } }];
}

export const ssoConfigurationDecider: Decider<SsoConfigurationCommand, SsoConfigurationEvent, SsoConfigurationState> = {
  initialState: () => ({ settings: DEFAULT_SSO_SETTINGS, scimToken: null, previousScimToken: null, pendingTrustChange: null, retiringCertificates: [], refreshFailing: false, expiryWarnings: [], spKeys: [] }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'SsoConfigurationUpdated':
        return {
          ...withSettings(state, event.data.changes),
          scimToken: event.data.issuedScimToken ?? (event.data.revokedScimTokenId ? null : state.scimToken),
        };
      case 'SsoTrustChangeProposed':
        return { ...state, pendingTrustChange: { changeId: event.data.changeId, changes: event.data.changes } };
      case 'SsoTrustChangeConfirmed':
        return { ...withSettings(state, event.data.changes), pendingTrustChange: null };
      case 'SsoTrustChangeDiscarded':
        return { ...state, pendingTrustChange: null };
      case 'SamlMetadataRefreshed': {
        const { addedCertificates, retiringCertificates, removedCertificates, entryPoint } = event.data;
        const leaving = new Set([...retiringCertificates.map((entry) => entry.certificate), ...removedCertificates, ...addedCertificates]);
        return {
          ...state,
          settings: {
            ...state.settings,
            samlCertificates: [...state.settings.samlCertificates.filter((pem) => !leaving.has(pem)), ...addedCertificates],
            ...(entryPoint === null ? {} : { samlEntryPoint: entryPoint }),
          },
          retiringCertificates: [...state.retiringCertificates.filter((entry) => !leaving.has(entry.certificate)), ...retiringCertificates],
          refreshFailing: false,
        };
      }
      case 'SamlMetadataRefreshFailed':
        return { ...state, refreshFailing: true };
      case 'SamlSpKeyIssued':
        return { ...state, spKeys: keysAfterIssue(state.spKeys, event.data.key, event.data.retiring) };
      case 'SamlCertificateExpiryWarned':
        return { ...state, expiryWarnings: [...state.expiryWarnings, `${event.data.fingerprintSha256}:${event.data.daysBefore}`] };
      case 'ScimTokenOverlapStarted':
        return { ...state, previousScimToken: { tokenId: event.data.tokenId, endsAt: event.data.endsAt } };
      case 'ScimTokenOverlapEnded':
        return { ...state, previousScimToken: null };
    }
  },
  decide: (command, state) => {
    switch (command.type) {
      case 'UpdateSsoConfiguration':
        return decideUpdate(command, state);
      case 'ConfirmSsoTrustChange': {
        const pending = assertPending(state, command.changeId);
        const next = { ...state.settings, ...pending.changes };
        assertSamlComplete(next);
        const changes = changedSettings<SamlTrustChanges>(state.settings, next, SAML_TRUST_SETTINGS);
        return [{ type: 'SsoTrustChangeConfirmed', data: { employerId: command.employerId, changeId: command.changeId, changes } }];
      }
      case 'DiscardSsoTrustChange':
        assertPending(state, command.changeId);
        return [{ type: 'SsoTrustChangeDiscarded', data: { employerId: command.employerId, changeId: command.changeId } }];
      case 'RefreshSamlMetadata':
        return decideMetadataRefresh(command.employerId, command.metadataUrl, command.reading, new Date(command.now), state);
      case 'WarnOfCertificateExpiry':
        return decideExpiryWarning(command.employerId, new Date(command.now), state);
      case 'RotateSamlSpKey': {
        const retiresAt = new Date(Date.parse(command.key.issuedAt) + command.overlapMs).toISOString();
        const retiring = state.spKeys.filter((key) => key.retiresAt === null).map((key) => ({ keyId: key.keyId, retiresAt }));
        return [{ type: 'SamlSpKeyIssued', data: { employerId: command.employerId, key: command.key, retiring } }];
      }
      case 'EndScimTokenOverlap': {
        const previous = previousTokenAt(state, command.now);
        return previous ? [{ type: 'ScimTokenOverlapEnded', data: { employerId: command.employerId, tokenId: previous.tokenId } }] : [];
      }
    }
  },
};

export const ssoConfigurationStream = (employerId: string) => tenantStream(employerId, 'sso', employerId);
