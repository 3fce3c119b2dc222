// One-time sign-in tokens of the built-in identity provider: stream tenant-<employerId>.signin-<tokenId>.
// Issued by the CLI (`signin-link`) and at the end of a SAML login; exchanged once for a session.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { SignInTokenEvent } from './events.ts';

export type SignInTokenCommand =
  | { type: 'IssueSignInToken'; tokenId: string; userId: string; tokenHash: string; expiresAt: string; via: 'cli' | 'saml' }
  | { type: 'RedeemSignInToken'; sessionId: string; now: string };

export type SignInTokenState = { status: 'absent' } | { status: 'issued' | 'redeemed'; tokenId: string; userId: string; expiresAt: string };

/** One answer for every unusable token: a caller learns nothing about which tokens exist. */
export const invalidSignInToken = () => new DomainError('unauthenticated', 'INVALID_SIGNIN_TOKEN', 'The sign-in link is invalid, expired or already used.');

export const signInTokenDecider: Decider<SignInTokenCommand, SignInTokenEvent, SignInTokenState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) =>
    event.type === 'SignInTokenIssued'
      ? { status: 'issued', tokenId: event.data.tokenId, userId: event.data.userId, expiresAt: event.data.expiresAt }
      : state.status === 'absent' ? state : { ...state, status: 'redeemed' },
  decide: (command, state) => {
    if (command.type === 'IssueSignInToken') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'Token already issued.');
      const { type: _type, ...data } = command;
      return [{ type: 'SignInTokenIssued', data }];
    }
    if (state.status !== 'issued' || Date.parse(command.now) >= Date.parse(state.expiresAt)) throw invalidSignInToken();
    return [{ type: 'SignInTokenRedeemed', data: { tokenId: state.tokenId, userId: state.userId, sessionId: command.sessionId } }];
  },
};

export const signInTokenStream = (employerId: string, tokenId: string) => tenantStream(employerId, 'signin', tokenId);
