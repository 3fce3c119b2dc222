import { describe, it } from 'vitest';
import { apiKeyDecider } from '../../src/api-keys/api-key.ts';
import type { ApiKeyCreated } from '../../src/api-keys/events.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(apiKeyDecider);
const NOW = '2026-03-01T12:00:00.000Z';

const createdData: ApiKeyCreated['data'] = {
  keyId: 'key_1',
  name: 'Payroll sync',
  keyHash: 'a'.repeat(64),
  keyPrefix: 'aaaaaaaa',
  scopes: ['cohort:write'],
  allowedIpCidrs: ['203.0.113.0/24'],
  expiresAt: null,
  rateLimitPerMinute: null,
  createdBy: 'user_1',
  createdAt: NOW,
};
const created: ApiKeyCreated = { type: 'ApiKeyCreated', data: createdData };
const { createdAt: _createdAt, ...createCommandData } = createdData;

describe('API key decider', () => {
  it('creates a key', () => {
    given([]).when({ type: 'CreateApiKey', ...createCommandData, now: NOW }).then([created]);
  });

  it('refuses an expiry that is not in the future', () => {
    given([]).when({ type: 'CreateApiKey', ...createCommandData, expiresAt: NOW, now: NOW }).thenThrows({ kind: 'invalid', code: 'VALIDATION_ERROR' });
  });

  it('refuses to create the same key twice', () => {
    given([created]).when({ type: 'CreateApiKey', ...createCommandData, now: NOW }).thenThrows({ kind: 'conflict' });
  });

  it('revokes an active key, and revoking again changes nothing', () => {
    given([created]).when({ type: 'RevokeApiKey', reason: 'admin', now: NOW }).then([
      { type: 'ApiKeyRevoked', data: { keyId: 'key_1', reason: 'admin', revokedAt: NOW } },
    ]);
    given([created, { type: 'ApiKeyRevoked', data: { keyId: 'key_1', reason: 'admin', revokedAt: NOW } }])
      .when({ type: 'RevokeApiKey', reason: 'admin', now: '2026-03-02T00:00:00.000Z' })
      .then([]);
  });

  it('suspends and resumes, each only when it changes something', () => {
    given([created]).when({ type: 'SuspendApiKey' }).then([{ type: 'ApiKeySuspended', data: { keyId: 'key_1' } }]);
    given([created, { type: 'ApiKeySuspended', data: { keyId: 'key_1' } }]).when({ type: 'SuspendApiKey' }).then([]);
    given([created, { type: 'ApiKeySuspended', data: { keyId: 'key_1' } }]).when({ type: 'ResumeApiKey' }).then([{ type: 'ApiKeyResumed', data: { keyId: 'key_1' } }]);
    given([created]).when({ type: 'ResumeApiKey' }).then([]);
  });

  it('renames, and ignores a rename to the same name', () => {
    given([created]).when({ type: 'RenameApiKey', name: 'Payroll' }).then([{ type: 'ApiKeyRenamed', data: { keyId: 'key_1', name: 'Payroll' } }]);
    given([created]).when({ type: 'RenameApiKey', name: 'Payroll sync' }).then([]);
  });

  it('refuses changes to a revoked key', () => {
    const revoked = { type: 'ApiKeyRevoked', data: { keyId: 'key_1', reason: 'admin', revokedAt: NOW } } as const;
    given([created, revoked]).when({ type: 'ResumeApiKey' }).thenThrows({ kind: 'conflict', code: 'API_KEY_REVOKED' });
    given([created, revoked]).when({ type: 'RenameApiKey', name: 'x' }).thenThrows({ kind: 'conflict', code: 'API_KEY_REVOKED' });
  });

  it('answers 404 for a key that does not exist', () => {
    given([]).when({ type: 'RevokeApiKey', reason: 'admin', now: NOW }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
    given([]).when({ type: 'SuspendApiKey' }).thenThrows({ kind: 'not_found', code: 'NOT_FOUND' });
  });

  it('changes only the settings that differ, refusing a past expiry', () => {
    given([created]).when({ type: 'ChangeApiKeySettings', changes: { scopes: ['cohort:write'], rateLimitPerMinute: 10 }, now: NOW })
      .then([{ type: 'ApiKeySettingsChanged', data: { keyId: 'key_1', changes: { rateLimitPerMinute: 10 } } }]);
    given([created]).when({ type: 'ChangeApiKeySettings', changes: { allowedIpCidrs: ['203.0.113.0/24'] }, now: NOW }).then([]);
    given([created]).when({ type: 'ChangeApiKeySettings', changes: { expiresAt: NOW }, now: NOW }).thenThrows({ kind: 'invalid', code: 'VALIDATION_ERROR' });
  });

  it('rolls a key once; a rolled key past its overlap is revoked for changes', () => {
    const rolled = { type: 'ApiKeyRolled', data: { keyId: 'key_1', successorKeyId: 'key_2', revokesAt: '2026-03-02T12:00:00.000Z' } } as const;
    given([created]).when({ type: 'RollApiKey', successorKeyId: 'key_2', revokesAt: '2026-03-02T12:00:00.000Z', now: NOW }).then([rolled]);
    given([created, rolled]).when({ type: 'RollApiKey', successorKeyId: 'key_3', revokesAt: '2026-03-02T12:00:00.000Z', now: NOW })
      .thenThrows({ kind: 'conflict', code: 'API_KEY_ROLLED' });
    given([created, rolled]).when({ type: 'ChangeApiKeySettings', changes: { rateLimitPerMinute: 5 }, now: '2026-03-02T12:00:00.000Z' })
      .thenThrows({ kind: 'conflict', code: 'API_KEY_REVOKED' });
    given([created, rolled]).when({ type: 'RevokeApiKey', reason: 'admin', now: NOW })
      .then([{ type: 'ApiKeyRevoked', data: { keyId: 'key_1', reason: 'admin', revokedAt: NOW } }]);
  });

  it('refuses to roll an expired key', () => {
    given([{ ...created, data: { ...createdData, expiresAt: NOW } }])
      .when({ type: 'RollApiKey', successorKeyId: 'key_2', revokesAt: '2026-03-02T12:00:00.000Z', now: NOW })
      .thenThrows({ kind: 'conflict', code: 'API_KEY_EXPIRED' });
  });
});
