// The IdP signing certificates over time, decided for the SSO configuration aggregate
// (sso-configuration.ts): the metadata read again (new certificates trusted at once, removed ones
// retiring for a grace period) and the warnings before the last valid one expires.
//
// Decisions where the issue is silent:
// - A refresh reads the metadata URL in effect, which an administrator configured (in a session, or by
//   confirming an API key's proposal): following that IdP's own rollover is what the administrator
//   trusted, so it takes effect without a confirmation. It never changes which IdP is trusted: metadata
//   naming another entity id is refused (the administrator saves the configuration to accept it).
// - Certificates the metadata no longer lists stay trusted for REMOVED_CERTIFICATE_GRACE_MS, so that
//   responses signed just before the IdP switched still sign in; an IdP that withdraws a compromised
//   key revokes it at its side too. A certificate an administrator typed alongside the metadata URL is
//   the metadata's to keep or retire like any other.
// - The warning is about the certificate expiring last among those in effect (retiring ones leave
//   anyway); a check that finds fewer days left than several thresholds warns once, at the nearest.
import { describeCertificate } from './settings-input.ts';
import { CERTIFICATE_EXPIRY_WARNING_DAYS, type RetiringCertificate, type SsoConfigurationEvent, type SsoSettings } from './events.ts';
import type { IdpMetadata } from './idp-metadata.ts';

export const REMOVED_CERTIFICATE_GRACE_MS = 24 * 3600_000;
const DAY_MS = 86_400_000;

export type MetadataRefreshState = {
  settings: SsoSettings;
  retiringCertificates: RetiringCertificate[];
  /** The last refresh failed (cleared by one that succeeds, or a new metadata URL). */
  refreshFailing: boolean;
  /** `<fingerprint>:<days>` of every warning given. */
  expiryWarnings: string[];
};

export type MetadataReading = { metadata: IdpMetadata } | { failure: { code: string; message: string } };

export function decideMetadataRefresh(employerId: string, metadataUrl: string, reading: MetadataReading, now: Date, state: MetadataRefreshState): SsoConfigurationEvent[] {
  // The URL was changed or cleared since it was read: this reading is of no interest any more.
  if (state.settings.samlMetadataUrl !== metadataUrl) return [];
  const failed = (code: string, message: string): SsoConfigurationEvent[] => [{ type: 'SamlMetadataRefreshFailed', data: { employerId, metadataUrl, code, message } }];
  if ('failure' in reading) return failed(reading.failure.code, reading.failure.message);
  const { metadata } = reading;
  if (state.settings.samlIssuer !== null && metadata.issuer !== state.settings.samlIssuer) {
    return failed('SAML_METADATA_ISSUER_CHANGED', `The metadata names the IdP ${metadata.issuer}, not ${state.settings.samlIssuer}; save the SSO configuration to trust it.`);
  }
  const listed = new Set(metadata.certificates);
  const addedCertificates = metadata.certificates.filter((pem) => !state.settings.samlCertificates.includes(pem));
  const trustedUntil = new Date(now.getTime() + REMOVED_CERTIFICATE_GRACE_MS).toISOString();
  const retiringCertificates = state.settings.samlCertificates.filter((pem) => !listed.has(pem)).map((certificate) => ({ certificate, trustedUntil }));
  const removedCertificates = state.retiringCertificates.filter((retiring) => !listed.has(retiring.certificate) && Date.parse(retiring.trustedUntil) <= now.getTime()).map((retiring) => retiring.certificate);
  const entryPoint = metadata.entryPoint !== state.settings.samlEntryPoint ? metadata.entryPoint : null;
  const changed = addedCertificates.length + retiringCertificates.length + removedCertificates.length > 0 || entryPoint !== null;
  if (!changed && !state.refreshFailing) return [];
  return [{ type: 'SamlMetadataRefreshed', data: { employerId, metadataUrl, addedCertificates, retiringCertificates, removedCertificates, entryPoint } }];
}

/** The certificate in effect that expires last, or null when there is none. */
export function lastValidCertificate(certificates: string[]) {
  const described = certificates.map(describeCertificate);
  return described.reduce<(typeof described)[number] | null>((last, next) => (last === null || next.validTo > last.validTo ? next : last), null);
}

/** The nearest warning threshold reached at `now` for a certificate valid to `validTo`, or null. */
export function expiryWarningDays(validTo: string, now: Date): (typeof CERTIFICATE_EXPIRY_WARNING_DAYS)[number] | null {
  const daysLeft = (Date.parse(validTo) - now.getTime()) / DAY_MS;
  return [...CERTIFICATE_EXPIRY_WARNING_DAYS].sort((a, b) => a - b).find((days) => daysLeft <= days) ?? null;
}

export function decideExpiryWarning(employerId: string, now: Date, state: MetadataRefreshState): SsoConfigurationEvent[] {
  if (!state.settings.samlEnabled) return [];
  const last = lastValidCertificate(state.settings.samlCertificates);
  const daysBefore = last && expiryWarningDays(last.validTo, now);
  if (!last || daysBefore === null || state.expiryWarnings.includes(`${last.fingerprintSha256}:${daysBefore}`)) return [];
  return [{ type: 'SamlCertificateExpiryWarned', data: { employerId, fingerprintSha256: last.fingerprintSha256, subject: last.subject, validTo: last.validTo, daysBefore } }];
}

/** The certificates a response may be signed with at `now`: those in effect and the retiring ones still in their grace period. */
export function trustedCertificates(certificates: string[], retiring: RetiringCertificate[], now: Date): string[] {
  return [...certificates, ...retiring.filter((entry) => Date.parse(entry.trustedUntil) > now.getTime()).map((entry) => entry.certificate)];
}
