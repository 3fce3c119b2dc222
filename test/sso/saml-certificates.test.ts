// The SSO configuration decider on IdP certificates over time (src/sso/saml-certificates.ts): the
// metadata read again, the grace period of certificates it drops, and the expiry warnings.
import { generate } from 'selfsigned';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SamlCertificateExpiryWarned, SamlMetadataRefreshed, SsoConfigurationEvent, SsoConfigurationUpdated } from '../../src/sso/events.ts';
import { REMOVED_CERTIFICATE_GRACE_MS, trustedCertificates } from '../../src/sso/saml-certificates.ts';
import { describeCertificate } from '../../src/sso/settings-input.ts';
import { ssoConfigurationDecider, type RefreshSamlMetadata } from '../../src/sso/sso-configuration.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(ssoConfigurationDecider);
const EMPLOYER = 'emp_1';
const URL = 'https://idp.example/metadata';
const ISSUER = 'https://idp.example/';
const ENTRY = 'https://idp.example/sso';
const NOW = new Date('2026-03-01T10:00:00.000Z');
const DAY = 86_400_000;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

const configured = (certificates: string[]): SsoConfigurationUpdated => ({
  type: 'SsoConfigurationUpdated',
  data: {
    employerId: EMPLOYER,
    changes: { samlEnabled: true, samlMetadataUrl: URL, samlEntryPoint: ENTRY, samlIssuer: ISSUER, samlCertificates: certificates },
    issuedScimToken: null,
    revokedScimTokenId: null,
  },
});
const refresh = (certificates: string[], now = NOW, metadata: { issuer?: string; entryPoint?: string } = {}): RefreshSamlMetadata => ({
  type: 'RefreshSamlMetadata',
  employerId: EMPLOYER,
  metadataUrl: URL,
  reading: { metadata: { issuer: metadata.issuer ?? ISSUER, entryPoint: metadata.entryPoint ?? ENTRY, logoutUrl: null, certificates } },
  now: now.toISOString(),
});
const refreshed = (data: Partial<SamlMetadataRefreshed['data']>): SamlMetadataRefreshed => ({
  type: 'SamlMetadataRefreshed',
  data: { employerId: EMPLOYER, metadataUrl: URL, addedCertificates: [], retiringCertificates: [], removedCertificates: [], entryPoint: null, ...data },
});
const failed = (code: string, message: string): SsoConfigurationEvent => ({ type: 'SamlMetadataRefreshFailed', data: { employerId: EMPLOYER, metadataUrl: URL, code, message } });
const graceEnd = (from: Date) => new Date(from.getTime() + REMOVED_CERTIFICATE_GRACE_MS).toISOString();

describe('IdP metadata read again', () => {
  it('trusts a certificate the metadata adds at once, and retires one it drops for the grace period', () => {
    given([configured(['A'])]).when(refresh(['A', 'B'])).then([refreshed({ addedCertificates: ['B'] })]);
    given([configured(['A']), refreshed({ addedCertificates: ['B'] })])
      .when(refresh(['B']))
      .then([refreshed({ retiringCertificates: [{ certificate: 'A', trustedUntil: graceEnd(NOW) }] })]);
  });

  it('stops trusting a retiring certificate at the first refresh after its grace period, not before', () => {
    const history = [configured(['A', 'B']), refreshed({ retiringCertificates: [{ certificate: 'A', trustedUntil: graceEnd(NOW) }] })];
    given(history).when(refresh(['B'], at(REMOVED_CERTIFICATE_GRACE_MS - 1))).then([]);
    given(history).when(refresh(['B'], at(REMOVED_CERTIFICATE_GRACE_MS))).then([refreshed({ removedCertificates: ['A'] })]);
  });

  it('trusts a retiring certificate the metadata lists again as a new one', () =>
    given([configured(['A', 'B']), refreshed({ retiringCertificates: [{ certificate: 'A', trustedUntil: graceEnd(NOW) }] })])
      .when(refresh(['A', 'B']))
      .then([refreshed({ addedCertificates: ['A'] })]));

  it('follows a new sign-in URL, and records nothing when nothing changed', () => {
    given([configured(['A'])]).when(refresh(['A'], NOW, { entryPoint: 'https://idp.example/sso2' })).then([refreshed({ entryPoint: 'https://idp.example/sso2' })]);
    given([configured(['A'])]).when(refresh(['A'])).then([]);
  });

  it('refuses metadata of another IdP, keeping what is trusted', () =>
    given([configured(['A'])])
      .when(refresh(['X'], NOW, { issuer: 'https://evil.example/' }))
      .then([failed('SAML_METADATA_ISSUER_CHANGED', expect.stringContaining('https://evil.example/') as unknown as string)]));

  it('records a failed reading, and the next good one even when it changes nothing (the failure is over)', () => {
    const failure = { ...refresh(['A']), reading: { failure: { code: 'SAML_METADATA_UNREACHABLE', message: 'samlMetadataUrl: HTTP 503' } } };
    given([configured(['A'])]).when(failure).then([failed('SAML_METADATA_UNREACHABLE', 'samlMetadataUrl: HTTP 503')]);
    given([configured(['A']), failed('SAML_METADATA_UNREACHABLE', 'samlMetadataUrl: HTTP 503')]).when(refresh(['A'])).then([refreshed({})]);
  });

  it('ignores a reading of a URL no longer in effect', () => given([configured(['A'])]).when({ ...refresh(['B']), metadataUrl: 'https://old.example/metadata' }).then([]));

  it('trusts retiring certificates only until their grace period ends', () => {
    const retiring = [{ certificate: 'A', trustedUntil: graceEnd(NOW) }];
    expect(trustedCertificates(['B'], retiring, at(REMOVED_CERTIFICATE_GRACE_MS - 1))).toEqual(['B', 'A']);
    expect(trustedCertificates(['B'], retiring, at(REMOVED_CERTIFICATE_GRACE_MS))).toEqual(['B']);
  });
});

describe('certificate expiry warnings', () => {
  let soon: string; // expires 40 days after NOW
  let later: string; // expires 400 days after NOW
  beforeAll(async () => {
    const make = async (days: number) =>
      (await generate([{ name: 'commonName', value: `idp-${days}` }], { keySize: 2048, algorithm: 'sha256', notBeforeDate: at(-DAY), notAfterDate: at(days * DAY) })).cert;
    [soon, later] = await Promise.all([make(40), make(400)]);
  });
  const warn = (now: Date) => ({ type: 'WarnOfCertificateExpiry' as const, employerId: EMPLOYER, now: now.toISOString() });
  const warned = (pem: string, daysBefore: 30 | 7 | 1): SamlCertificateExpiryWarned => {
    const { fingerprintSha256, subject, validTo } = describeCertificate(pem);
    return { type: 'SamlCertificateExpiryWarned', data: { employerId: EMPLOYER, fingerprintSha256, subject, validTo, daysBefore } };
  };

  it('warns 30, 7 and 1 days before, once each', () => {
    given([configured([soon])]).when(warn(at(9 * DAY))).then([]);
    given([configured([soon])]).when(warn(at(10 * DAY))).then([warned(soon, 30)]);
    given([configured([soon]), warned(soon, 30)]).when(warn(at(20 * DAY))).then([]);
    given([configured([soon]), warned(soon, 30)]).when(warn(at(33 * DAY))).then([warned(soon, 7)]);
    given([configured([soon]), warned(soon, 30), warned(soon, 7)]).when(warn(at(39 * DAY))).then([warned(soon, 1)]);
    given([configured([soon]), warned(soon, 30), warned(soon, 7), warned(soon, 1)]).when(warn(at(39.5 * DAY))).then([]);
  });

  it('warns once, at the nearest threshold, when several were passed since the last check', () =>
    given([configured([soon])]).when(warn(at(36 * DAY))).then([warned(soon, 7)]));

  it('warns about the certificate that expires last: none while a later one is trusted', () => {
    given([configured([soon, later])]).when(warn(at(39 * DAY))).then([]);
    given([configured([soon]), refreshed({ addedCertificates: [later] })]).when(warn(at(39 * DAY))).then([]);
  });

  it('does not warn while SAML is off', () =>
    given([configured([soon]), { ...configured([soon]), data: { ...configured([soon]).data, changes: { samlEnabled: false } } }]).when(warn(at(39 * DAY))).then([]));
});
