import { describe, expect, it } from 'vitest';
import type { SsoConfigurationEvent, SsoConfigurationUpdated, SsoTrustChangeConfirmed, SsoTrustChangeDiscarded, SsoTrustChangeProposed } from '../../src/sso/events.ts';
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
  candidateSpKey: null,
  trust: { mode: 'apply' },
  scimTokenOverlapEndsAt: null,
  now: NOW,
});
/** The same update from an API key: trust changes are proposed as change `changeId`. */
const keyUpdate = (changes: UpdateSsoConfiguration['changes'], changeId = 'chg-2'): UpdateSsoConfiguration => ({ ...update(changes), trust: { mode: 'propose', changeId } });

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
    given([]).when(update({ samlEnabled: true, samlIssuer: 'https://idp.example/' })).thenThrows({ kind: 'invalid', code: 'SAML_CONFIGURATION_INCOMPLETE', message: expect.stringContaining('samlEntryPoint, samlCertificate') }));

  it('enables SAML once the three are set', () => given([samlReady]).when(update({ samlEnabled: true })).then([updated({ changes: { samlEnabled: true } })]));

  it('refuses to clear a prerequisite while SAML is enabled', () =>
    given([samlReady, updated({ changes: { samlEnabled: true } })]).when(update({ samlCertificates: [] })).thenThrows({ kind: 'invalid', code: 'SAML_CONFIGURATION_INCOMPLETE' }));

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

  it('refuses rotation while SCIM is disabled', () => given([]).when(update({}, true)).thenThrows({ kind: 'invalid', code: 'SCIM_NOT_ENABLED' }));

  it('issues one token when enabling and rotating in the same request', () =>
    given([]).when(update({ scimEnabled: true }, true)).then([updated({ changes: { scimEnabled: true }, issuedScimToken: { ...CANDIDATE, issuedAt: NOW } })]));
});

const proposed = (changeId: string, changes: SsoTrustChangeProposed['data']['changes'], replacedChangeId: string | null = null): SsoTrustChangeProposed => ({
  type: 'SsoTrustChangeProposed',
  data: { employerId: EMPLOYER, changeId, changes, replacedChangeId },
});
const confirmed = (changeId: string, changes: SsoTrustChangeConfirmed['data']['changes']): SsoTrustChangeConfirmed => ({ type: 'SsoTrustChangeConfirmed', data: { employerId: EMPLOYER, changeId, changes } });
const discarded = (changeId: string): SsoTrustChangeDiscarded => ({ type: 'SsoTrustChangeDiscarded', data: { employerId: EMPLOYER, changeId } });
const samlOn = updated({ changes: { samlEnabled: true } });
const attackerIdp = { samlEntryPoint: 'https://evil.example/sso', samlCertificates: ['EVIL PEM'], samlIssuer: 'https://evil.example/' };

describe('SAML trust changes made with an API key', () => {
  it('wait as a proposal; the other settings of the same request apply at once', () =>
    given([samlReady, samlOn]).when(keyUpdate({ ...attackerIdp, samlFirstNameAttribute: 'givenName', scimEnabled: true })).then([
      updated({ changes: { samlFirstNameAttribute: 'givenName', scimEnabled: true }, issuedScimToken: { ...CANDIDATE, issuedAt: NOW } }),
      proposed('chg-2', attackerIdp),
    ]));

  it('count the e-mail attribute and NameID format as trust: they decide who the response names', () =>
    given([samlReady, samlOn]).when(keyUpdate({ samlEmailAttribute: 'displayName', samlNameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' }))
      .then([proposed('chg-2', { samlEmailAttribute: 'displayName', samlNameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' })]));

  it('leave out what is in effect already, and record nothing when that is all', () => {
    given([samlReady]).when(keyUpdate({ samlIssuer: 'https://idp.example/', samlEntryPoint: 'https://evil.example/sso' })).then([proposed('chg-2', { samlEntryPoint: 'https://evil.example/sso' })]);
    given([samlReady]).when(keyUpdate({ samlIssuer: 'https://idp.example/' })).then([]);
  });

  it('replace the pending change under a new id, keeping the values the new request does not name', () =>
    given([samlReady, proposed('chg-1', { samlEntryPoint: 'https://evil.example/sso' })])
      .when(keyUpdate({ samlIssuer: 'https://evil.example/' }))
      .then([proposed('chg-2', { samlEntryPoint: 'https://evil.example/sso', samlIssuer: 'https://evil.example/' }, 'chg-1')]));

  it('record nothing when the request repeats the pending change, and discard it when the request brings everything back to what is in effect', () => {
    const pending = proposed('chg-1', { samlEntryPoint: 'https://evil.example/sso' });
    given([samlReady, pending]).when(keyUpdate({ samlEntryPoint: 'https://evil.example/sso' })).then([]);
    given([samlReady, pending]).when(keyUpdate({ samlEntryPoint: 'https://idp.example/sso' })).then([discarded('chg-1')]);
  });

  it('except turning SAML off, which takes trust away and applies at once (and drops a pending enabling)', () =>
    given([samlReady, samlOn, proposed('chg-1', { samlIssuer: 'https://evil.example/' })]).when(keyUpdate({ samlEnabled: false })).then([updated({ changes: { samlEnabled: false } })]));

  it('are refused at once when they would enable SAML without entry point, certificate and issuer', () =>
    given([]).when(keyUpdate({ samlEnabled: true, samlIssuer: 'https://evil.example/' })).thenThrows({ kind: 'invalid', code: 'SAML_CONFIGURATION_INCOMPLETE' }));

  it('are applied at once from a session', () => given([samlReady, samlOn]).when(update(attackerIdp)).then([updated({ changes: attackerIdp })]));
});

describe('confirming and discarding the pending trust change', () => {
  const pending = proposed('chg-1', { ...attackerIdp, samlEnabled: true });

  it('puts the pending values in effect (those that still differ)', () =>
    given([samlReady, pending, updated({ changes: { samlIssuer: 'https://evil.example/' } })])
      .when({ type: 'ConfirmSsoTrustChange', employerId: EMPLOYER, changeId: 'chg-1' })
      .then([confirmed('chg-1', { samlEnabled: true, samlEntryPoint: 'https://evil.example/sso', samlCertificates: ['EVIL PEM'] })]));

  it('refuses an id that is not the pending change: unknown, replaced, or already confirmed', () => {
    const confirm = (changeId: string) => ({ type: 'ConfirmSsoTrustChange' as const, employerId: EMPLOYER, changeId });
    given([samlReady, pending]).when(confirm('chg-0')).thenThrows({ kind: 'not_found', code: 'TRUST_CHANGE_NOT_PENDING' });
    given([samlReady, pending, proposed('chg-2', attackerIdp, 'chg-1')]).when(confirm('chg-1')).thenThrows({ kind: 'not_found', code: 'TRUST_CHANGE_NOT_PENDING' });
    given([samlReady, pending, confirmed('chg-1', attackerIdp)]).when(confirm('chg-1')).thenThrows({ kind: 'not_found', code: 'TRUST_CHANGE_NOT_PENDING' });
  });

  it('refuses to confirm what would, by now, enable SAML without an issuer', () =>
    given([samlReady, proposed('chg-1', { samlEnabled: true }), updated({ changes: { samlIssuer: null } })])
      .when({ type: 'ConfirmSsoTrustChange', employerId: EMPLOYER, changeId: 'chg-1' })
      .thenThrows({ kind: 'invalid', code: 'SAML_CONFIGURATION_INCOMPLETE' }));

  it('discards the pending change, changing nothing in effect', () => {
    given([samlReady, pending]).when({ type: 'DiscardSsoTrustChange', employerId: EMPLOYER, changeId: 'chg-1' }).then([discarded('chg-1')]);
    given([samlReady, pending, discarded('chg-1')]).when({ type: 'DiscardSsoTrustChange', employerId: EMPLOYER, changeId: 'chg-1' }).thenThrows({ kind: 'not_found', code: 'TRUST_CHANGE_NOT_PENDING' });
  });
});

describe('SCIM token rotation with an overlap', () => {
  const ENDS = '2026-03-01T11:00:00.000Z';
  const rotateWithOverlap = (endsAt: string | null = ENDS): UpdateSsoConfiguration => ({ ...update({}, true), scimTokenOverlapEndsAt: endsAt });
  const rotatedAway = updated({ issuedScimToken: { ...CANDIDATE, issuedAt: NOW }, revokedScimTokenId: 'tok-1' });
  const overlapStarted: SsoConfigurationEvent = { type: 'ScimTokenOverlapStarted', data: { employerId: EMPLOYER, tokenId: 'tok-1', tokenHash: 'hash-1', endsAt: ENDS } };
  const overlapEnded: SsoConfigurationEvent = { type: 'ScimTokenOverlapEnded', data: { employerId: EMPLOYER, tokenId: 'tok-1' } };

  it('keeps the replaced token working until the overlap ends', () => given([scimOn]).when(rotateWithOverlap()).then([rotatedAway, overlapStarted]));

  it('ends an overlap early, only while it lasts', () => {
    given([scimOn, rotatedAway, overlapStarted]).when({ type: 'EndScimTokenOverlap', employerId: EMPLOYER, now: NOW }).then([overlapEnded]);
    given([scimOn, rotatedAway, overlapStarted]).when({ type: 'EndScimTokenOverlap', employerId: EMPLOYER, now: ENDS }).then([]);
    given([scimOn]).when({ type: 'EndScimTokenOverlap', employerId: EMPLOYER, now: NOW }).then([]);
  });

  it('stops the replaced token when SCIM is turned off or a rotation asks for no overlap', () => {
    given([scimOn, rotatedAway, overlapStarted]).when(update({ scimEnabled: false })).then([
      updated({ changes: { scimEnabled: false }, revokedScimTokenId: CANDIDATE.tokenId }),
      overlapEnded,
    ]);
    given([scimOn, rotatedAway, overlapStarted]).when({ ...rotateWithOverlap(null), candidateScimToken: { tokenId: 'tok-3', tokenHash: 'hash-3' } }).then([
      updated({ issuedScimToken: { tokenId: 'tok-3', tokenHash: 'hash-3', issuedAt: NOW }, revokedScimTokenId: CANDIDATE.tokenId }),
      overlapEnded,
    ]);
  });
});
