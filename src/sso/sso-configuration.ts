// The employer's SSO configuration aggregate: stream tenant-<employerId>.sso-<employerId>. SAML settings
// and the SCIM switch are a partial update; the SCIM bearer token is issued when SCIM is first enabled
// or on rotation, revoked on rotation or when SCIM is disabled. Only the token's SHA-256 hash is kept.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import { DEFAULT_SSO_SETTINGS, type ScimTokenRecord, type SsoConfigurationEvent, type SsoSettings } from './events.ts';

export type UpdateSsoConfiguration = {
  type: 'UpdateSsoConfiguration';
  employerId: string;
  changes: Partial<SsoSettings>;
  rotateScimToken: boolean;
  /** A fresh token's id and hash, used only if this command issues a token (decide stays pure). */
  candidateScimToken: { tokenId: string; tokenHash: string };
  now: string;
};
export type SsoConfigurationCommand = UpdateSsoConfiguration;

export type SsoConfigurationState = { settings: SsoSettings; scimToken: ScimTokenRecord | null };

function changedSettings(before: SsoSettings, after: SsoSettings): Partial<SsoSettings> {
  return Object.fromEntries(
    (Object.keys(after) as Array<keyof SsoSettings>)
      .filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]))
      .map((key) => [key, after[key]]),
  ) as Partial<SsoSettings>;
}

export const ssoConfigurationDecider: Decider<SsoConfigurationCommand, SsoConfigurationEvent, SsoConfigurationState> = {
  initialState: () => ({ settings: DEFAULT_SSO_SETTINGS, scimToken: null }),
  evolve: (state, event) => ({
    settings: { ...state.settings, ...event.data.changes },
    scimToken: event.data.issuedScimToken ?? (event.data.revokedScimTokenId ? null : state.scimToken),
  }),
  decide: (command, state) => {
    const next = { ...state.settings, ...command.changes };
    if (next.samlEnabled) {
      const missing = [
        next.samlEntryPoint ? null : 'samlEntryPoint',
        next.samlCertificates.length > 0 ? null : 'samlCertificate',
        next.samlIssuer ? null : 'samlIssuer',
      ].filter((field) => field !== null);
      if (missing.length > 0) {
        throw new DomainError(400, 'SAML_CONFIGURATION_INCOMPLETE', `SAML cannot be enabled without ${missing.join(', ')} (set them, or samlMetadataUrl, first or in the same request).`, { missing });
      }
    }
    if (command.rotateScimToken && !next.scimEnabled) {
      throw new DomainError(400, 'SCIM_NOT_ENABLED', 'rotateScimToken needs SCIM to be enabled (send scimEnabled: true).');
    }
    const changes = changedSettings(state.settings, next);
    const issue = next.scimEnabled && (state.scimToken === null || command.rotateScimToken);
    const revokedScimTokenId = state.scimToken && (!next.scimEnabled || command.rotateScimToken) ? state.scimToken.tokenId : null;
    if (Object.keys(changes).length === 0 && !issue && !revokedScimTokenId) return [];
    return [{
      type: 'SsoConfigurationUpdated',
      data: {
        employerId: command.employerId,
        changes,
        issuedScimToken: issue ? { ...command.candidateScimToken, issuedAt: command.now } : null,
        revokedScimTokenId,
      },
    }];
  },
};

export const ssoConfigurationStream = (employerId: string) => tenantStream(employerId, 'sso', employerId);
