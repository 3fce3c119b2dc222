import { describe, it } from 'vitest';
import type { SmartClientRegistered } from '../../src/smart-clients/events.ts';
import { smartClientDecider } from '../../src/smart-clients/smart-client.ts';
import { deciderSpec } from '../support/decider.ts';

const given = deciderSpec(smartClientDecider);
const NOW = '2026-11-25T12:00:00.000Z';
const jwks = { keys: [{ kty: 'EC', crv: 'P-384', x: 'x', y: 'y', kid: 'k1' }] };
const registeredData: SmartClientRegistered['data'] = {
  clientId: 'smart_1', name: 'Bulk tool', jwks, jwksUrl: null, scopes: ['system/*.rs'], registeredBy: 'user_1', registeredAt: NOW,
};
const registered: SmartClientRegistered = { type: 'SmartClientRegistered', data: registeredData };
const { registeredAt: _registeredAt, ...registerData } = registeredData;

describe('SMART client decider', () => {
  it('registers a client once', () => {
    given([]).when({ type: 'RegisterSmartClient', ...registerData, now: NOW }).then([registered]);
    given([registered]).when({ type: 'RegisterSmartClient', ...registerData, now: NOW }).thenThrows({ kind: 'conflict' });
  });

  it('replaces the key set', () => {
    given([registered]).when({ type: 'ReplaceSmartClientKeys', jwks: null, jwksUrl: 'https://keys.example/jwks', now: NOW })
      .then([{ type: 'SmartClientKeysReplaced', data: { clientId: 'smart_1', jwks: null, jwksUrl: 'https://keys.example/jwks', replacedAt: NOW } }]);
  });

  it('revokes once (again: nothing), and a revoked client cannot change', () => {
    const revoked = { type: 'SmartClientRevoked' as const, data: { clientId: 'smart_1', revokedAt: NOW } };
    given([registered]).when({ type: 'RevokeSmartClient', now: NOW }).then([revoked]);
    given([registered, revoked]).when({ type: 'RevokeSmartClient', now: NOW }).then([]);
    given([registered, revoked]).when({ type: 'ReplaceSmartClientKeys', jwks, jwksUrl: null, now: NOW }).thenThrows({ kind: 'conflict', code: 'SMART_CLIENT_REVOKED' });
  });

  it('knows no client that was never registered', () => {
    given([]).when({ type: 'RevokeSmartClient', now: NOW }).thenThrows({ kind: 'not_found' });
  });
});
