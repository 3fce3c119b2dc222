// The rules of sign-in tokens and sessions, with no database: a token is issued once and redeemed once
// before it expires, every unusable token refused alike; a session starts once and ends once.
import { describe, it } from 'vitest';
import type { SessionEvent, SignInTokenEvent } from '../../src/identity/events.ts';
import { sessionDecider } from '../../src/identity/session.ts';
import { signInTokenDecider } from '../../src/identity/signin-token.ts';
import { deciderSpec } from '../support/decider.ts';

const expiresAt = '2030-01-01T00:15:00.000Z';
const beforeExpiry = '2030-01-01T00:14:59.999Z';

describe('sign-in token decider', () => {
  const given = deciderSpec(signInTokenDecider);
  const issue = { type: 'IssueSignInToken', tokenId: 'tok_1', userId: 'u1', tokenHash: 'a'.repeat(64), expiresAt, via: 'cli' } as const;
  const issued: SignInTokenEvent = { type: 'SignInTokenIssued', data: { tokenId: 'tok_1', userId: 'u1', tokenHash: 'a'.repeat(64), expiresAt, via: 'cli' } };
  const redeemed: SignInTokenEvent = { type: 'SignInTokenRedeemed', data: { tokenId: 'tok_1', userId: 'u1', sessionId: 'ses_1' } };
  const invalid = { kind: 'unauthenticated', code: 'INVALID_SIGNIN_TOKEN' } as const;

  it('issues a token once', () => {
    given([]).when(issue).then([issued]);
    given([issued]).when(issue).thenThrows({ kind: 'conflict', code: 'CONFLICT' });
  });

  it('redeems an issued token for a session before it expires', () => {
    given([issued]).when({ type: 'RedeemSignInToken', sessionId: 'ses_1', now: beforeExpiry }).then([redeemed]);
  });

  it('refuses, with one answer, a token that was never issued, has expired or was redeemed already', () => {
    given([]).when({ type: 'RedeemSignInToken', sessionId: 'ses_1', now: beforeExpiry }).thenThrows(invalid);
    given([issued]).when({ type: 'RedeemSignInToken', sessionId: 'ses_1', now: expiresAt }).thenThrows(invalid);
    given([issued, redeemed]).when({ type: 'RedeemSignInToken', sessionId: 'ses_2', now: beforeExpiry }).thenThrows(invalid);
  });
});

describe('session decider', () => {
  const given = deciderSpec(sessionDecider);
  const start = { type: 'StartSession', sessionId: 'ses_1', userId: 'u1', sessionHash: 'b'.repeat(64), expiresAt } as const;
  const started: SessionEvent = { type: 'SessionStarted', data: { sessionId: 'ses_1', userId: 'u1', sessionHash: 'b'.repeat(64), expiresAt } };
  const endedByLogout: SessionEvent = { type: 'SessionEnded', data: { sessionId: 'ses_1', userId: 'u1', reason: 'logout' } };

  it('starts a session once', () => {
    given([]).when(start).then([started]);
    given([started]).when(start).thenThrows({ kind: 'conflict', code: 'CONFLICT' });
    given([started, endedByLogout]).when(start).thenThrows({ kind: 'conflict', code: 'CONFLICT' });
  });

  it('ends an active session with its reason; ending a session that is not active changes nothing', () => {
    given([started]).when({ type: 'EndSession', reason: 'logout' }).then([endedByLogout]);
    given([started]).when({ type: 'EndSession', reason: 'user_deactivated' }).then([
      { type: 'SessionEnded', data: { sessionId: 'ses_1', userId: 'u1', reason: 'user_deactivated' } },
    ]);
    given([started, endedByLogout]).when({ type: 'EndSession', reason: 'user_deactivated' }).then([]);
    given([]).when({ type: 'EndSession', reason: 'logout' }).then([]);
  });
});
