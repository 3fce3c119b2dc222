// The API key aggregate: stream tenant-<employerId>.apiKey-<keyId>. A key is created once, may be
// suspended and resumed (status inactive/active) and renamed, and is revoked for good. Expiry is not
// an event: a key is expired from the moment its expiresAt passes, whoever looks.
import { DomainError, type Decider } from '../event-store/decider.ts';
import type { CommandContext } from '../event-store/command-handler.ts';
import { tenantStream } from '../event-store/port.ts';
import type { ApiKeyCreated, ApiKeyEvent, RevokeReason } from './events.ts';

export type CreateApiKey = { type: 'CreateApiKey'; now: string } & Omit<ApiKeyCreated['data'], 'createdAt'>;
export type ApiKeyCommand =
  | CreateApiKey
  | { type: 'RenameApiKey'; name: string }
  | { type: 'SuspendApiKey' }
  | { type: 'ResumeApiKey' }
  | { type: 'RevokeApiKey'; reason: RevokeReason; now: string };

export type ApiKeyState =
  | { status: 'absent' }
  | { status: 'active' | 'inactive' | 'revoked'; keyId: string; keyHash: string; name: string };

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyEvent, ApiKeyState> = {
  initialState: () => ({ status: 'absent' }),
  evolve: (state, event) => {
    if (event.type === 'ApiKeyCreated') {
      return { status: 'active', keyId: event.data.keyId, keyHash: event.data.keyHash, name: event.data.name };
    }
    if (state.status === 'absent') return state;
    switch (event.type) {
      case 'ApiKeyRenamed':
        return { ...state, name: event.data.name };
      case 'ApiKeySuspended':
        return { ...state, status: 'inactive' };
      case 'ApiKeyResumed':
        return { ...state, status: 'active' };
      case 'ApiKeyRevoked':
        return { ...state, status: 'revoked' };
    }
  },
  decide: (command, state) => {
    if (command.type === 'CreateApiKey') {
      if (state.status !== 'absent') throw new DomainError('conflict', 'CONFLICT', 'An API key with this id already exists.');
      if (command.expiresAt !== null && Date.parse(command.expiresAt) <= Date.parse(command.now)) {
        throw new DomainError('invalid', 'VALIDATION_ERROR', 'Invalid request: body.expiresAt: must be in the future', {
          errors: [{ path: 'body.expiresAt', message: 'must be in the future' }],
        });
      }
      const { type: _type, now, ...data } = command;
      return [{ type: 'ApiKeyCreated', data: { ...data, createdAt: now } }];
    }
    if (state.status === 'absent') throw new DomainError('not_found', 'NOT_FOUND', 'API key was not found.');
    if (command.type === 'RevokeApiKey') {
      // Revoking twice is not an error: DELETE is idempotent and the key stays revoked as it was.
      if (state.status === 'revoked') return [];
      return [{ type: 'ApiKeyRevoked', data: { keyId: state.keyId, reason: command.reason, revokedAt: command.now } }];
    }
    if (state.status === 'revoked') throw new DomainError('conflict', 'API_KEY_REVOKED', 'The API key is revoked; a revoked key cannot be changed.');
    switch (command.type) {
      case 'RenameApiKey':
        return command.name === state.name ? [] : [{ type: 'ApiKeyRenamed', data: { keyId: state.keyId, name: command.name } }];
      case 'SuspendApiKey':
        return state.status === 'inactive' ? [] : [{ type: 'ApiKeySuspended', data: { keyId: state.keyId } }];
      case 'ResumeApiKey':
        return state.status === 'active' ? [] : [{ type: 'ApiKeyResumed', data: { keyId: state.keyId } }];
    }
  },
};

export const apiKeyStream = (employerId: string, keyId: string) => tenantStream(employerId, 'apiKey', keyId);

/** Revocation of each of `keyIds` (already revoked keys write nothing), for an append shared with another command. */
export function revokeKeyCommands(context: CommandContext, employerId: string, keyIds: readonly string[], now: string, reason: RevokeReason = 'creator_deactivated') {
  return keyIds.map((keyId) => ({
    streamName: apiKeyStream(employerId, keyId),
    decider: apiKeyDecider,
    command: { type: 'RevokeApiKey', reason, now } as ApiKeyCommand,
    context,
  }));
}
