// The platform service token aggregate: stream system.platformToken-<id> (tokens belong to no
// employer: the platform's services act for every employer). Only the SHA-256 of the token is kept.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { systemStream } from '../event-store/port.ts';
import type { PlatformFamily, PlatformTokenEvent } from './events.ts';

export const platformTokenStream = (tokenId: string) => systemStream('platformToken', tokenId);

export type PlatformTokenCommand =
  | { type: 'CreatePlatformToken'; tokenId: string; name: string; families: PlatformFamily[]; tokenHash: string }
  | { type: 'RevokePlatformToken' };

export type PlatformTokenState = { status: 'absent' } | { status: 'active' | 'revoked'; tokenId: string };

export const platformTokenDecider: Decider<PlatformTokenCommand, PlatformTokenEvent, PlatformTokenState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'PlatformTokenCreated':
        return { status: 'active', tokenId: event.data.tokenId };
      case 'PlatformTokenRevoked':
        return state.status === 'absent' ? state : { ...state, status: 'revoked' };
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreatePlatformToken') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'ALREADY_EXISTS', 'The platform token exists.');
      const { tokenId, name, families, tokenHash } = command;
      return [{ type: 'PlatformTokenCreated', data: { tokenId, name, families, tokenHash } }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'Platform token was not found.');
    // Revoking twice is a no-op: the operator's intent holds.
    return state.status === 'revoked' ? [] : [{ type: 'PlatformTokenRevoked', data: { tokenId: state.tokenId } }];
  },
};
