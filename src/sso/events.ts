// Events of the SSO configuration (src/sso/sso-configuration.ts) and of SAML login attempts
// (src/sso/saml-login.ts). The sso read model (projections/sso/) applies the configuration's.
import type { DomainEvent } from '../event-store/decider.ts';
import type { SamlFailureReason } from './saml.ts';

export type SsoSettings = {
  samlEnabled: boolean;
  samlMetadataUrl: string | null;
  samlEntryPoint: string | null;
  /** PEM certificates the IdP signs with; several during a key rollover. */
  samlCertificates: string[];
  samlIssuer: string | null;
  samlNameIdFormat: string | null;
  samlEmailAttribute: string | null;
  samlFirstNameAttribute: string | null;
  samlLastNameAttribute: string | null;
  scimEnabled: boolean;
};

export type ScimTokenRecord = { tokenId: string; tokenHash: string; issuedAt: string };

export type SsoConfigurationUpdated = DomainEvent<
  'SsoConfigurationUpdated',
  {
    employerId: string;
    /** Only the settings that changed. */
    changes: Partial<SsoSettings>;
    issuedScimToken: ScimTokenRecord | null;
    revokedScimTokenId: string | null;
  }
>;
export type SsoConfigurationEvent = SsoConfigurationUpdated;

/** Settings of an employer that never saved any. */
export const DEFAULT_SSO_SETTINGS: SsoSettings = {
  samlEnabled: false,
  samlMetadataUrl: null,
  samlEntryPoint: null,
  samlCertificates: [],
  samlIssuer: null,
  samlNameIdFormat: null,
  samlEmailAttribute: null,
  samlFirstNameAttribute: null,
  samlLastNameAttribute: null,
  scimEnabled: false,
};

export type SamlLoginFailureReason = SamlFailureReason | 'SAML_NOT_ENABLED' | 'USER_DEACTIVATED' | 'EMAIL_IN_OTHER_EMPLOYER';

export type SamlLoginSucceeded = DomainEvent<'SamlLoginSucceeded', { loginId: string; userId: string; assertionId: string; provisioned: boolean }>;
/** `clientIp` helps an auditor tell an IdP misconfiguration (many) from probing (few, odd addresses). */
export type SamlLoginFailed = DomainEvent<'SamlLoginFailed', { loginId: string; reason: SamlLoginFailureReason; clientIp: string }>;
export type SamlLoginEvent = SamlLoginSucceeded | SamlLoginFailed;
