// The SMART client aggregate: stream tenant-<employerId>.smartClient-<clientId>. A client is registered
// once with its key set (inline JWKS or a JWKS URL) and scopes; its key set may be replaced; it is
// revoked for good, and with it every access token issued to it.
import { DomainError, type Decider } from '../event-store/decider.ts';
import { tenantStream } from '../event-store/port.ts';
import type { KeySource, SmartClientEvent, SmartClientRegistered } from './events.ts';

export type SmartClientCommand =
  | ({ type: 'RegisterSmartClient'; now: string } & Omit<SmartClientRegistered['data'], 'registeredAt'>)
  | ({ type: 'ReplaceSmartClientKeys'; now: string } & KeySource)
  | { type: 'RevokeSmartClient'; now: string };

export type SmartClientState =
  | { status: 'absent' }
  | { status: 'active' | 'revoked'; clientId: string; keys: KeySource };

export const smartClientDecider: Decider<SmartClientCommand, SmartClientEvent, SmartClientState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    switch (event.type) {
      case 'SmartClientRegistered':
        return { status: 'active', clientId: event.data.clientId, keys: { jwks: event.data.jwks, jwksUrl: event.data.jwksUrl } };
      case 'SmartClientKeysReplaced':
        return state.status === 'absent' ? state : { ...state, keys: { jwks: event.data.jwks, jwksUrl: event.data.jwksUrl } };
      case 'SmartClientRevoked':
        return state.status === 'absent' ? state : { ...state, status: 'revoked' };
    }
  },
  decide: (command, state) => {
    if (command.type === 'RegisterSmartClient') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'A SMART client with this id already exists.');
      const { type: _type, now, ...data } = command;
      return [{ type: 'SmartClientRegistered', data: { ...data, registeredAt: now } }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'SMART client was not found.');
    if (command.type === 'RevokeSmartClient') {
      // DELETE is idempotent: a revoked client stays revoked as it was.
      return state.status === 'revoked' ? [] : [{ type: 'SmartClientRevoked', data: { clientId: state.clientId, revokedAt: command.now } }];
    }
    if (state.status === 'revoked') throw new DomainError('conflict', 'SMART_CLIENT_REVOKED', 'The SMART client is revoked; a revoked client cannot be changed.');
    return [{ type: 'SmartClientKeysReplaced', data: { clientId: state.clientId, jwks: command.jwks, jwksUrl: command.jwksUrl, replacedAt: command.now } }];
  },
};

export const smartClientStream = (employerId: string, clientId: string) => tenantStream(employerId, 'smartClient', clientId);
