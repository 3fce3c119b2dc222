// Audit records of the SSO configuration and of SAML logins. Field names only: certificates and URLs
// stay in the event, token hashes never reach the audit log.
import type { AuditMappers } from '../capability.ts';
import { X509Certificate } from 'node:crypto';
import type { SamlCertificateExpiryWarned, SamlMetadataRefreshed, SamlSpKeyIssued, SsoSettings } from './events.ts';
import { trustChangesOf } from './sso-configuration.ts';

/** The SAML trust settings among an event's changes (field names only). */
const trustFieldsOf = (changes: unknown): string[] => Object.keys(trustChangesOf(changes as Partial<SsoSettings>)).sort();

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

export const ssoAuditMappers: AuditMappers = {
  ScimTokenOverlapStarted: (event) => ({
    action: 'sso.scim_token.overlap_start',
    targetType: 'employer',
    targetId: String(event.data.employerId),
    details: { tokenId: event.data.tokenId, endsAt: event.data.endsAt },
  }),
  ScimTokenOverlapEnded: (event) => ({ action: 'sso.scim_token.overlap_end', targetType: 'employer', targetId: String(event.data.employerId), details: { tokenId: event.data.tokenId } }),
  SsoConfigurationUpdated: (event) => ({
    action: 'sso.config.update',
    targetType: 'employer',
    targetId: String(event.data.employerId),
    details: {
      fields: Object.keys(event.data.changes as object).sort(),
      trustFields: trustFieldsOf(event.data.changes),
      scimTokenIssued: event.data.issuedScimToken !== null,
      scimTokenRevoked: event.data.revokedScimTokenId !== null,
    },
  }),
  SsoTrustChangeProposed: (event) => ({
    action: 'sso.trust_change.propose',
    targetType: 'employer',
    targetId: String(event.data.employerId),
    details: { changeId: event.data.changeId, fields: trustFieldsOf(event.data.changes), replacedChangeId: event.data.replacedChangeId },
  }),
  SsoTrustChangeConfirmed: (event) => ({
    action: 'sso.trust_change.confirm',
    targetType: 'employer',
    targetId: String(event.data.employerId),
    details: { changeId: event.data.changeId, fields: trustFieldsOf(event.data.changes) },
  }),
  SsoTrustChangeDiscarded: (event) => ({
    action: 'sso.trust_change.discard',
    targetType: 'employer',
    targetId: String(event.data.employerId),
    details: { changeId: event.data.changeId },
  }),
  // Certificates by fingerprint: the audit log names them, the event holds them.
  SamlMetadataRefreshed: (event) => {
    const data = event.data as SamlMetadataRefreshed['data'];
    return {
      action: 'sso.metadata.refresh',
      targetType: 'employer',
      targetId: data.employerId,
      details: {
        metadataUrl: data.metadataUrl,
        addedCertificates: data.addedCertificates.map(fingerprintOf),
        retiringCertificates: data.retiringCertificates.map((entry) => ({ fingerprintSha256: fingerprintOf(entry.certificate), trustedUntil: entry.trustedUntil })),
        removedCertificates: data.removedCertificates.map(fingerprintOf),
        entryPoint: data.entryPoint,
      },
    };
  },
  SamlMetadataRefreshFailed: (event) => ({
    action: 'sso.metadata.refresh_failed',
    targetType: 'employer',
    targetId: String(event.data.employerId),
    details: { metadataUrl: event.data.metadataUrl, code: event.data.code, message: event.data.message },
  }),
  SamlCertificateExpiryWarned: (event) => {
    const { employerId, ...details } = event.data as SamlCertificateExpiryWarned['data'];
    return { action: 'sso.certificate.expiry_warning', targetType: 'employer', targetId: employerId, details };
  },
  SamlSpKeyIssued: (event) => {
    const { employerId, key, retiring } = event.data as SamlSpKeyIssued['data'];
    return { action: 'sso.sp_key.issue', targetType: 'employer', targetId: employerId, details: { keyId: key.keyId, fingerprintSha256: fingerprintOf(key.certificate), retiring } };
  },
  SamlLoginSucceeded: (event) => ({
    action: event.data.idpInitiated ? 'auth.saml.login_idp_initiated' : 'auth.saml.login',
    targetType: 'user',
    targetId: String(event.data.userId),
    details: { assertionId: event.data.assertionId, provisioned: event.data.provisioned, idpInitiated: event.data.idpInitiated },
  }),
  SamlLoginsRefused: (event) => ({
    action: 'auth.saml.logins_refused',
    targetType: 'employer',
    targetId: String(event.metadata.tenantId),
    details: event.data,
  }),
  SamlLoginFailed: (event) => ({
    action: 'auth.saml.login_failed',
    targetType: 'saml_login',
    targetId: String(event.data.loginId),
    details: { reason: event.data.reason, clientIp: event.data.clientIp },
  }),
};
