import { describe, expect, it } from 'vitest';
import type { SsoConfigurationUpdated } from '../../src/sso/events.ts';
import { ssoConfigurationDecider, type UpdateSsoConfiguration } from '../../src/sso/sso-configuration.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(ssoConfigurationDecider);
const EMPLOYER = 'emp_1';
const NOW = '2026-03-01T10:00:00.000Z';
const CANDIDATE = { tokenId: 'tok-new', tokenHash: 'hash-new' };

const update = (changes: UpdateSsoConfiguration['changes'], rotateScimToken = false): UpdateSsoConfiguration => ({
  type: 'UpdateSsoConfiguration',
  employerId: EMPLOYER,
  changes,
  rotateScimToken,
  candidateScimToken: CANDIDATE,
  now: NOW,
});

const updated = (data: Partial<SsoConfigurationUpdated['data']>): SsoConfigurationUpdated => ({
  type: 'SsoConfigurationUpdated',
  data: { employerId: EMPLOYER, changes: {}, issuedScimToken: null, revokedScimTokenId: null, ...data },
});

const scimOn = updated({ changes: { scimEnabled: true }, issuedScimToken: { tokenId: 'tok-1', tokenHash: 'hash-1', issuedAt: '2026-01-01T00:00:00.000Z' } });
const samlReady = updated({ changes: { samlEntryPoint: 'https://idp.example/sso', samlCertificates: ['PEM'], samlIssuer: 'https://idp.example/' } });

describe('SSO configuration decider', () => {
  it('records only the settings that change', () =>
    given([samlReady]).when(update({ samlIssuer: 'https://idp.example/', samlEmailAttribute: 'mail' })).then([updated({ changes: { samlEmailAttribute: 'mail' } })]));

  it('records nothing when nothing changes', () => given([samlReady]).when(update({ samlIssuer: 'https://idp.example/' })).then([]));

  it('refuses samlEnabled without entry point, certificate and issuer, naming what is missing', () =>
    given([]).when(update({ samlEnabled: true, samlIssuer: 'https://idp.example/' })).thenThrows({ status: 400, code: 'SAML_CONFIGURATION_INCOMPLETE', message: expect.stringContaining('samlEntryPoint, samlCertificate') }));

  it('enables SAML once the three are set', () => given([samlReady]).when(update({ samlEnabled: true })).then([updated({ changes: { samlEnabled: true } })]));

  it('refuses to clear a prerequisite while SAML is enabled', () =>
    given([samlReady, updated({ changes: { samlEnabled: true } })]).when(update({ samlCertificates: [] })).thenThrows({ status: 400, code: 'SAML_CONFIGURATION_INCOMPLETE' }));

  it('issues a SCIM token when SCIM is first enabled', () =>
    given([]).when(update({ scimEnabled: true })).then([updated({ changes: { scimEnabled: true }, issuedScimToken: { ...CANDIDATE, issuedAt: NOW } })]));

  it('issues no new token when SCIM is already enabled', () => given([scimOn]).when(update({ scimEnabled: true })).then([]));

  it('rotates: a new token and the old one revoked', () =>
    given([scimOn]).when(update({}, true)).then([updated({ issuedScimToken: { ...CANDIDATE, issuedAt: NOW }, revokedScimTokenId: 'tok-1' })]));

  it('revokes the token when SCIM is disabled', () =>
    given([scimOn]).when(update({ scimEnabled: false })).then([updated({ changes: { scimEnabled: false }, revokedScimTokenId: 'tok-1' })]));

  it('issues a fresh token when SCIM is enabled again after being disabled', () =>
    given([scimOn, updated({ changes: { scimEnabled: false }, revokedScimTokenId: 'tok-1' })])
      .when(update({ scimEnabled: true }))
      .then([updated({ changes: { scimEnabled: true }, issuedScimToken: { ...CANDIDATE, issuedAt: NOW } })]));

  it('refuses rotation while SCIM is disabled', () => given([]).when(update({}, true)).thenThrows({ status: 400, code: 'SCIM_NOT_ENABLED' }));

  it('issues one token when enabling and rotating in the same request', () =>
    given([]).when(update({ scimEnabled: true }, true)).then([updated({ changes: { scimEnabled: true }, issuedScimToken: { ...CANDIDATE, issuedAt: NOW } })]));
});
